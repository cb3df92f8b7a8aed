/**
 * The in-memory Store of the tests (tests/helpers/memory-store.ts) keeps files like the real
 * stores, so tests of channels and the web API that use it see the same behaviour.
 */
import { MemoryStore } from '../helpers/memory-store.js';
import { filesContract } from './files-contract.js';

filesContract('memory store', {
  async fresh() {
    // One MemoryStore is the whole place: a "restart" is the same object opened again.
    const store = new MemoryStore();
    return {
      make: () => store,
      count: async () => store.files.size,
      async breakWrites(s) {
        (s as MemoryStore).failWrites = 'ENOSPC: no space left on device';
        return async () => {
          (s as MemoryStore).failWrites = null;
        };
      },
    };
  },
});
