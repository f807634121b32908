// @vitest-environment jsdom
import { describe, expect, it } from 'vitest';
import { FollowState, INTENT_MS, StreamFollower } from '../../src/reply/follow';

describe('FollowState', () => {
  it('follows until the user scrolls up, and again once back at the end', () => {
    const f = new FollowState();
    f.scrolled(0, 100, true); // our own scroll down
    expect(f.following).toBe(true);
    f.intent(1000);
    f.scrolled(1010, -40, false); // a key or the scrollbar, upwards
    expect(f.following).toBe(false);
    f.scrolled(2000, 300, false); // down, not yet at the end
    expect(f.following).toBe(false);
    f.scrolled(2100, 50, true); // back at the end
    expect(f.following).toBe(true);
  });

  it('stops at once on a wheel up, even if nothing scrolls', () => {
    const f = new FollowState();
    f.intent(0, true);
    expect(f.following).toBe(false);
  });

  it('ignores scrolls up that no user caused (layout shifts)', () => {
    const f = new FollowState();
    f.scrolled(5000, -200, false);
    expect(f.following).toBe(true);
    f.intent(0);
    f.scrolled(INTENT_MS + 1, -10, false);
    expect(f.following).toBe(true);
  });
});

/** A scroller 500 px high over 5000 px of content, holding `node` whose bottom is at `bottom` (content coords). */
function setup(bottom: { value: number }) {
  const scroller = document.createElement('div');
  scroller.style.overflowY = 'auto';
  const node = document.createElement('div');
  scroller.append(node);
  document.body.append(scroller);
  Object.defineProperty(scroller, 'clientHeight', { value: 500 });
  Object.defineProperty(scroller, 'scrollHeight', { get: () => 5000 });
  scroller.getBoundingClientRect = () => ({ top: 0, bottom: 500, left: 0, right: 800, width: 800, height: 500 }) as DOMRect;
  node.getBoundingClientRect = () =>
    ({ top: 300 - scroller.scrollTop, bottom: bottom.value - scroller.scrollTop, left: 0, right: 800, width: 800, height: bottom.value - 300 }) as DOMRect;
  return { scroller, node };
}

describe('StreamFollower', () => {
  it('keeps the bottom of a growing reply in view', () => {
    const bottom = { value: 450 };
    const { scroller, node } = setup(bottom);
    const now = 0;
    const f = new StreamFollower(node, () => now);
    f.start();
    expect(f.following).toBe(true);
    bottom.value = 900;
    f.keep();
    expect(scroller.scrollTop).toBe(408); // 900 - 500 + 8
  });

  it('lets go after a wheel up and follows again at the end', () => {
    const bottom = { value: 450 };
    const { scroller, node } = setup(bottom);
    let now = 0;
    const f = new StreamFollower(node, () => now);
    f.start();
    scroller.dispatchEvent(new WheelEvent('wheel', { deltaY: -100 }));
    bottom.value = 2000;
    f.keep();
    expect(scroller.scrollTop).toBe(0);
    scroller.scrollTop = 1600; // the user scrolls down to the end
    now = 5000;
    scroller.dispatchEvent(new Event('scroll'));
    expect(f.following).toBe(true);
    bottom.value = 2400;
    f.keep();
    expect(scroller.scrollTop).toBe(1908);
    f.stop();
    expect(f.active).toBe(false);
  });

  it('does not pull the page to a reply that is out of view', () => {
    const bottom = { value: 3000 };
    const { node } = setup(bottom);
    node.getBoundingClientRect = () => ({ top: 2800, bottom: 3000 }) as DOMRect;
    const f = new StreamFollower(node, () => 0);
    f.start();
    expect(f.following).toBe(false);
  });
});
