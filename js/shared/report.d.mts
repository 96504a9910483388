// Types of report.mjs for the JupyterLite extension's TypeScript (the module itself is plain JS).
export interface IProblem {
  kind: 'damaged' | 'refused' | 'needs' | 'failed';
  names: string[];
  record: number | null;
  offset: number | null;
  message: string;
  code: string | null;
  calls: string[];
}
export const MANIFEST: string;
export const RECORDED_CELLS: string;
export function internalRecord(rec: { kind?: string; names?: string[] } | null | undefined): string;
export function recordsSummary(records: { kind?: string; names?: string[] }[] | null | undefined): string;
export const CORE_CODES: readonly string[];
export function shownText(text: unknown): string;
export function recordLabel(names: string[] | null | undefined): string;
export function variableNames(names: string[] | null | undefined): string[];
export function problemLine(label: string, problem: { names?: string[]; message?: string }): string;
export function problemsOf(report: { problems?: IProblem[] }, kind: string): IProblem[];
export function restoredNothing(report: { ok: boolean; restored?: unknown[] }): boolean;
export function fmtBytes(n: number | null | undefined): string;
export function fmtMs(ms: number | null | undefined): string;
export function exportFileName(name: string): string;
export function replayNotes(replay: { skipped?: { name: string; message: string }[];
  flagged?: { message: string }[]; choices?: { names: string[]; reason: string }[] } | null | undefined):
  { name: string | null; text: string }[];
export function replayOutputs(report: { replay?: { cells?: { count: number; ran: boolean; output: string }[] } | null }):
  { count: number; output: string }[];
export interface ITrust {
  provenance: 'yours' | 'foreign';
  foreign_reason: string | null;
  imports: { target: string; danger: string | null; why: string | null; written: string[];
             records: number[]; names: string[]; bindings: string[] }[];
}
export interface IImportRow { danger: string | null; mark: string; target: string; written: string[]; usedBy: string; why: string }
export const DANGER_MARKS: Readonly<Record<string, string>>;
export function importRows(trust: ITrust | null | undefined): IImportRow[];
export function foreignLine(trust: ITrust | null | undefined): string;
export function pointLabel(meta: { cell?: { executionCount?: number | null; firstLine?: string } | null } | null | undefined): string;
export function holdsNothing(meta: { variables?: number; names?: string[]; skipped?: unknown } | null | undefined): boolean;
export function restoreChoice<T extends { name: string; meta?: { variables?: number; names?: string[]; skipped?: unknown } | null }>(entries: T[], own?: string[]): T | null;
export function bindingText(binding: { name?: string; module?: string; attr?: string | null }): string;
export function hostReport<T extends Record<string, unknown>>(op: string | null, fields?: T): { op: string | null; ok: boolean; problems: IProblem[]; warnings: string[]; timings: Record<string, number> } & T;
export function problem(kind: IProblem['kind'], message: string, detail?: { names?: string[]; record?: number | null; code?: string | null; offset?: number | null; calls?: string[] }): IProblem;
export function quoted(name: unknown): string;
export function notFound(name: string): IProblem;
export const DEFAULT_NAME: string;
export function listReport(entries: { name: string; meta: any }[], options?: { notebook?: string | null; own?: string[] }): any;
