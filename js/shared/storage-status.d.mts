// Types of storage-status.mjs for the JupyterLite extension's TypeScript (the module itself is plain JS).
export interface IStorageStatus {
  persistent: boolean | null;
  used: number | null;
  quota: number | null;
}
export interface ILost {
  missing: number | null;
  records: number | null;
  store?: 'folder';
}
export const KEEP_LABEL: string;
export const KEEP_TITLE: string;
export function declinedText(copies?: string): string;
export function canAskToKeep(status: IStorageStatus | null | undefined, storage?: unknown): boolean;
export function storageStatus(storage?: unknown): Promise<IStorageStatus | null>;
export function askPersistence(options?: { again?: boolean; storage?: unknown }): Promise<boolean | null>;
export function sizeText(n: number): string;
export function storageLine(status: IStorageStatus | null | undefined): string;
export function lostText(lost: ILost | null | undefined): string;
export function lostSummary(entries: { lost?: ILost | null }[] | null | undefined): string;
export function storageRemoved(options?: { indexedDB?: unknown; localStorage?: unknown; again?: boolean }): Promise<{ sinceMs: number } | null>;
export function markSaved(options?: { indexedDB?: unknown; localStorage?: unknown; now?: number }): Promise<void>;
export function removedText(gone: { sinceMs: number }): string;
