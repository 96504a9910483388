// Checkpoint operations of the demo worker (placeholder until the glue lands).
import { DemoError } from './worker-errors.mjs';

export async function setup() {
  return { elasticLite: false };
}

function notReady() {
  throw new DemoError('setup', 'Elastic Lite is not built yet: run `npm run build`.');
}

export const ops = {
  list: async () => [],
  checkpoint: notReady,
  restore: notReady,
  delete: notReady,
  export: notReady,
  import: notReady,
};
