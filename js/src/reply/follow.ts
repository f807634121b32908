/**
 * Following a streaming reply: keep the bottom of the growing output in view until the user
 * scrolls away (wheel, keys or scrollbar, upwards), and follow again once they scroll back down to
 * its end. `FollowState` is the decision (pure, unit-tested); `StreamFollower` wires it to the DOM.
 */

/** How long after a wheel, key, pointer or touch a scroll up counts as the user's. */
export const INTENT_MS = 1000;
/** How close (px) the reply's end must be to the viewport's bottom to count as "at the bottom". */
export const BOTTOM_SLACK = 24;

export class FollowState {
  following: boolean;

  constructor(following = true) {
    this.following = following;
  }

  /** The user did something that may scroll; `up` when it surely scrolls up (wheel up). */
  intent(now: number, up = false): void {
    this._intent = now;
    if (up) {
      this.following = false;
    }
  }

  /** A scroll happened: by `delta` px (negative: up); `atEnd` when the reply's end is in view. */
  scrolled(now: number, delta: number, atEnd: boolean): void {
    if (atEnd) {
      this.following = true;
    } else if (delta < 0 && now - this._intent <= INTENT_MS) {
      this.following = false;
    }
  }

  private _intent = -Infinity;
}

/** The element that scrolls `node` (the notebook's scroller), or null. */
export function scrollParent(node: HTMLElement): HTMLElement | null {
  for (let el = node.parentElement; el; el = el.parentElement) {
    const style = getComputedStyle(el);
    if (/(auto|scroll|overlay)/.test(style.overflowY) && el.scrollHeight > el.clientHeight) {
      return el;
    }
  }
  return null;
}

const UP_KEYS = new Set(['ArrowUp', 'PageUp', 'Home', 'Up']);

/** Keeps `node`'s bottom in view in its scroller while started, as `FollowState` decides. */
export class StreamFollower {
  constructor(node: HTMLElement, now: () => number = () => performance.now()) {
    this._node = node;
    this._now = now;
  }

  get following(): boolean {
    return !!this._state?.following;
  }

  get active(): boolean {
    return this._scroller !== null;
  }

  /** Start following (only if the reply is in view now: a reply off screen does not pull the page). */
  start(): void {
    if (this._scroller || !this._node.isConnected) {
      return;
    }
    const scroller = scrollParent(this._node);
    if (!scroller) {
      return;
    }
    this._scroller = scroller;
    this._top = scroller.scrollTop;
    this._state = new FollowState(this._inView());
    scroller.addEventListener('wheel', this._onWheel, { passive: true });
    scroller.addEventListener('scroll', this._onScroll, { passive: true });
    scroller.addEventListener('pointerdown', this._onIntent, { passive: true });
    scroller.addEventListener('touchstart', this._onIntent, { passive: true });
    scroller.addEventListener('keydown', this._onKey, { passive: true });
  }

  stop(): void {
    const s = this._scroller;
    if (!s) {
      return;
    }
    s.removeEventListener('wheel', this._onWheel);
    s.removeEventListener('scroll', this._onScroll);
    s.removeEventListener('pointerdown', this._onIntent);
    s.removeEventListener('touchstart', this._onIntent);
    s.removeEventListener('keydown', this._onKey);
    this._scroller = null;
    this._state = null;
  }

  /** After the reply grew: scroll so that its bottom is in view, if following. */
  keep(): void {
    const s = this._scroller;
    if (!s || !this._state?.following) {
      return;
    }
    const below = this._node.getBoundingClientRect().bottom - s.getBoundingClientRect().bottom;
    if (below > 0) {
      s.scrollTop += below + 8;
      this._top = s.scrollTop;
    }
  }

  private _inView(): boolean {
    const s = this._scroller!;
    const r = this._node.getBoundingClientRect();
    const v = s.getBoundingClientRect();
    return r.bottom > v.top && r.top < v.bottom;
  }

  private _atEnd(): boolean {
    const s = this._scroller!;
    const bottom = this._node.getBoundingClientRect().bottom;
    return (
      bottom <= s.getBoundingClientRect().bottom + BOTTOM_SLACK ||
      s.scrollTop + s.clientHeight >= s.scrollHeight - BOTTOM_SLACK
    );
  }

  private _onWheel = (e: WheelEvent): void => {
    this._state?.intent(this._now(), e.deltaY < 0);
  };

  private _onIntent = (): void => {
    this._state?.intent(this._now());
  };

  private _onKey = (e: KeyboardEvent): void => {
    if (UP_KEYS.has(e.key) || (e.key === ' ' && e.shiftKey)) {
      this._state?.intent(this._now());
    }
  };

  private _onScroll = (): void => {
    const s = this._scroller;
    if (!s || !this._state) {
      return;
    }
    const top = s.scrollTop;
    this._state.scrolled(this._now(), top - this._top, this._atEnd());
    this._top = top;
  };

  private _node: HTMLElement;
  private _now: () => number;
  private _scroller: HTMLElement | null = null;
  private _state: FollowState | null = null;
  private _top = 0;
}
