import { storeContract } from './store-contract.mjs';
import { MemoryStore } from '../../js/store/memory.mjs';

storeContract('MemoryStore', (opts) => new MemoryStore(opts));
