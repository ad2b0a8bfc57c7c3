// A tiny typed change notifier for stores: views subscribe, stores emit.

export class Emitter<T> {
  private readonly fns = new Set<(v: T) => void>();

  subscribe(fn: (v: T) => void): () => void {
    this.fns.add(fn);
    return () => this.fns.delete(fn);
  }

  emit(v: T): void {
    for (const fn of this.fns) {
      try {
        fn(v);
      } catch (e) {
        console.error('store listener:', e);
      }
    }
  }
}
