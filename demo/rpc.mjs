// The message protocol between the page and its Python worker, in one place.
//
// page → worker   { id, op, args }
// worker → page   { id, type: 'result', value }              the call ran: for every op but
//                                                            init, elastic_lite.host's report
//                 { id, type: 'error', error: {kind, ...} }    the worker itself failed
//                 { id, type: 'stream', name, text }           stdout/stderr while a cell runs
//                 { id, type: 'progress', phase, done, total, message }
//                 { type: 'status', state, message }           kernel state (starting/ready/...)
//
// What went wrong with a checkpoint is in the report's typed problems, not an error. Errors
// are failures of the worker itself and cross as plain objects (structured clone drops Error
// subclasses and custom fields) carrying a `kind`: 'python', 'setup' or 'internal'
// (messages.mjs explainError).

export class KernelClient {
  constructor(worker) {
    this.worker = worker;
    this.nextId = 1;
    this.pending = new Map();
    this.onStatus = () => {};
    worker.addEventListener('message', (e) => this.#dispatch(e.data));
    worker.addEventListener('error', (e) => {
      // A worker that fails to load (a syntax error, a missing module) only reports here.
      const error = { kind: 'setup', message: e.message || 'The Python worker failed to start.' };
      this.onStatus({ state: 'failed', message: error.message });
      for (const p of this.pending.values()) p.reject(error);
      this.pending.clear();
    });
  }

  // Calls `op` in the worker. `handlers.onStream` / `handlers.onProgress` receive the
  // intermediate messages of this call; `transfer` moves ArrayBuffers instead of copying them.
  call(op, args = {}, { onStream, onProgress, transfer = [] } = {}) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onStream, onProgress });
      this.worker.postMessage({ id, op, args }, transfer);
    });
  }

  #dispatch(msg) {
    if (msg.type === 'status') return this.onStatus(msg);
    const p = this.pending.get(msg.id);
    if (!p) return;
    if (msg.type === 'stream') return p.onStream?.(msg);
    if (msg.type === 'progress') return p.onProgress?.(msg);
    this.pending.delete(msg.id);
    if (msg.type === 'result') p.resolve(msg.value);
    else p.reject(msg.error);
  }
}
