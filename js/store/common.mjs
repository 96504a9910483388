// The rules every store shares (names, metadata, record keys, cutting a checkpoint file into
// records, entries, retention, writer locks). IndexedDBStore must stay a module without imports
// (it is also loaded from a Blob URL inside Pyodide), so they are written there and re-exported
// here for MemoryStore and DirectoryStore: every store behaves the same.
export {
  checkName, plainMeta, toBytes, byNewest, storeError,
  recordKey, recordPieces, pieceBytes, piecesLength, slices, isRecordKey, prepareRecords, KEY_LEAF_SIZE,
  splitContainer, checkEntry, distinctKeys, missingRecordError,
  neutralizeRecord, sameBytes, sameBytesAt, checkRecordsRead, checkRecordList,
  checkRetention, defaultRetention, expiredByRetention,
  holdLock, lockManager, DEFAULT_LOCK_TIMEOUT_MS, DEFAULT_ORPHAN_GRACE_MS,
  COUNTER_FORMAT, signCounter, readCounter, generationOf, counterVerdict, conflictError, keyChangedNotice, StoreNotes,
  canonicalJson, signedBytes, newSigningKey, importSigningKey, signEntry, signatureState, SIGNATURE_VERSION,
} from './indexeddb.mjs';
