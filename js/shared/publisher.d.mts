// Types of publisher.mjs for the TypeScript extension (the module is plain JS for Node and pages).
export const PUBLISHED_FORMAT: string;
export const PUBLISHED_VERSION: number;
export const KEY_FORMAT: string;
export interface IPublicKey { kty: 'EC'; crv: 'P-256'; x: string; y: string }
export interface IPublisherKey { format: string; keyId: string; publicKey: IPublicKey; privateKey: JsonWebKey }
export interface IPin { keyId: string; jwk: IPublicKey }
export interface IVerdict { state: 'trusted' | 'damaged' | 'unpinned' | 'invalid'; keyId: string | null; reason: string | null }
export function sha256Hex(bytes: Uint8Array): Promise<string>;
export function publicKeyOf(jwk: unknown): IPublicKey;
export function publisherKeyId(jwk: unknown): Promise<string>;
export function generatePublisherKey(): Promise<IPublisherKey>;
export function parsePublisherKey(text: string): Promise<IPublisherKey>;
export function signPublished(key: IPublisherKey, bytes: Uint8Array, info: Record<string, unknown>): Promise<Record<string, unknown>>;
export function pinnedKeys(list: unknown): Promise<IPin[]>;
export function verifyPublished(doc: unknown, bytes: Uint8Array, pins: IPin[]): Promise<IVerdict>;
export function publishedPaths(notebookPath: string): { checkpoint: string; document: string };
export function publishedSummary(doc: unknown, formatTime: (ms: number) => string): string;
