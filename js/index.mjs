// The `elastic-lite` npm package's main entry: what a page, a web worker or Node imports.
//
//   import { loadCore, createPyodide, installElasticLite, IndexedDBStore, MemoryStore } from 'elastic-lite';
//
// Node-only modules have entries of their own (not re-exported here, so a bundle for the
// browser never pulls in node: modules): 'elastic-lite/store/directory'. Each module is also
// reachable by itself: 'elastic-lite/core', 'elastic-lite/pyodide', 'elastic-lite/store/*'.
export { loadCore, CoreError } from './core.mjs';
export { installElasticLite, createPyodide, wheelFiles, WHEELS } from './pyodide-glue.mjs';
export { IndexedDBStore } from './store/indexeddb.mjs';
export { MemoryStore } from './store/memory.mjs';
