// Preloaded into the gateway by the idle-subscriber measurement (bench/clients.ts, with
// --expose-gc): SIGUSR2 runs a full collection, so the heap and RSS read after it hold only what is
// alive. SIGUSR1 is Node's inspector signal; SIGUSR2 is free.
process.on('SIGUSR2', () => globalThis.gc?.())
