/**
 * The "typing…" indicator: Telegram shows it for about five seconds per sendChatAction, so it is
 * repeated every four seconds until the turn ends. It is decoration: failures are only logged.
 */
const TYPING_EVERY_MS = 4000;

/** Call `send` now and every few seconds until the returned function is called. Never throws. */
export function typingLoop(send: () => Promise<unknown>, onError: (err: unknown) => void): () => void {
  let stopped = false;
  const tick = () => {
    if (stopped) return;
    try {
      send().catch(onError);
    } catch (err) {
      onError(err);
    }
  };
  tick();
  const timer = setInterval(tick, TYPING_EVERY_MS);
  timer.unref?.();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}

/** The typing loops running now, so the channel can end them all when it stops. */
export class Typers {
  private readonly running = new Set<() => void>();

  /** `typingLoop` until the returned function is called (or `stopAll`). */
  start(send: () => Promise<unknown>, onError: (err: unknown) => void): () => void {
    const stop = typingLoop(send, onError);
    const remove = () => {
      stop();
      this.running.delete(remove);
    };
    this.running.add(remove);
    return remove;
  }

  stopAll(): void {
    for (const stop of [...this.running]) stop();
  }
}
