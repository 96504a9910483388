// A dedicated worker of the store test page: where synchronous OPFS access handles exist (the
// kernel's worker has them), so IndexedDBStore writes large records to files. The tests import
// their modules into it through Playwright's worker.evaluate.
self.ready = true;
