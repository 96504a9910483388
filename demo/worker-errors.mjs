// Turns whatever a worker call threw into a plain object the page can explain in plain words.
// Structured clone keeps only a few fields of an Error, so the classification happens here,
// where the original error (a Pyodide PythonError, a DOMException, a store Error) still exists.

// An error the worker raises on purpose, already classified.
export class DemoError extends Error {
  constructor(kind, message, details = {}) {
    super(message);
    this.kind = kind;
    this.details = details;
  }
}

function isQuota(err) {
  const text = `${err?.name ?? ''} ${err?.message ?? ''}`;
  return err?.name === 'QuotaExceededError' || /quota/i.test(text);
}

export function toTransferable(err) {
  if (err instanceof DemoError) {
    return { kind: err.kind, message: err.message, ...err.details };
  }
  // Pyodide's PythonError: `type` is the Python exception class name; the message holds
  // the formatted traceback.
  if (err?.constructor?.name === 'PythonError' || typeof err?.type === 'string' && err?.__error_address) {
    return { kind: 'python', message: lastLine(err.message), ename: err.type, traceback: err.message };
  }
  if (isQuota(err)) {
    return { kind: 'quota', message: String(err.message ?? err), needed: Number.isFinite(err.needed) ? err.needed : null };
  }
  return { kind: 'internal', message: String(err?.message ?? err), stack: err?.stack ?? null };
}

function lastLine(text) {
  const lines = String(text ?? '').trim().split('\n');
  return lines[lines.length - 1];
}
