/**
 * Requests to the kernel that expect one answer with the same `id` (the dry run), each failing after a
 * timeout or when the kernel goes away. Pure: unit-tested with fake timers.
 */

let counter = 0;

/** A fresh request id: unique in this page (a counter) and across pages (random). */
export function requestId(): string {
  counter += 1;
  return `${Date.now().toString(36)}-${counter}-${Math.random().toString(36).slice(2, 8)}`;
}

interface IPending<T> {
  resolve: (value: T) => void;
  reject: (error: Error) => void;
  timer: ReturnType<typeof setTimeout>;
}

export class PendingRequests<T> {
  /** `timeoutMs`: how long an answer may take; `what` names it in the timeout's message. */
  constructor(readonly timeoutMs: number, readonly what = 'an answer') {}

  /** How many requests wait for their answer. */
  get size(): number {
    return this._pending.size;
  }

  /** Wait for the answer to request `id`. */
  wait(id: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        if (this._pending.delete(id)) {
          reject(new Error(`no ${this.what} from the kernel within ${Math.round(this.timeoutMs / 1000)} s`));
        }
      }, this.timeoutMs);
      this._pending.set(id, { resolve, reject, timer });
    });
  }

  /** The answer to `id` arrived; false if nothing waits for it (late, or not ours). */
  settle(id: string, value: T): boolean {
    const p = this._pending.get(id);
    if (!p) {
      return false;
    }
    this._pending.delete(id);
    clearTimeout(p.timer);
    p.resolve(value);
    return true;
  }

  /** Fail every request still waiting (the kernel went away). */
  failAll(reason: string): void {
    const all = [...this._pending.values()];
    this._pending.clear();
    for (const p of all) {
      clearTimeout(p.timer);
      p.reject(new Error(reason));
    }
  }

  private _pending = new Map<string, IPending<T>>();
}
