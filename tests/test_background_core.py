"""core/background.py without a kernel: replies one at a time and in order, each in the starting cell's context; a
queued one cancelled before it starts; its fault told; the end told once none is left (the kernel's side:
tests/test_background.py)."""

import contextvars, threading
import pytest
from boopiter_ext.core.background import Background
from boopiter_ext.errors import ReplyBroken

PARENT = contextvars.ContextVar('parent', default=None)   # as ipykernel keeps a request's parent header


def test_replies_run_in_order_each_in_its_cells_context_and_the_end_is_told_once():
    bg, go, seen, ends = Background(), threading.Event(), [], []
    bg.ended.append(lambda: ends.append(bg.running))
    def job(name):
        def run(cancelled):
            if name == 'first': go.wait(5)
            seen.append((name, PARENT.get(), cancelled.is_set()))
        return run
    for i, name in enumerate(('first', 'second', 'third')):
        PARENT.set(f'cell {i}')                            # the cell that started it
        bg.start(job(name), cell_id=f'c{i}')
    PARENT.set('cell 9')                                   # another cell runs meanwhile
    assert bg.running and bg.holds('c0') and bg.holds('c2') and not bg.holds('c9') and bg.wait(0.05) is False
    assert bg.cancel('c2') and not bg.cancel('c9')         # a queued one: told at once, so its view can say so
    while not seen: pass
    assert seen == [('third', 'cell 2', True)] and bg.holds('c2')   # its place is kept until those before it end
    go.set()
    assert bg.wait(5) and not bg.running and not bg.holds('c0')
    assert seen[1:] == [('first', 'cell 0', False), ('second', 'cell 1', False)]
    assert ends == [False]                                 # once, when none is left, not counted as running


def test_a_started_reply_is_not_cancelled_and_cancel_without_a_cell_takes_every_queued_one():
    bg, go, seen = Background(), threading.Event(), []
    bg.start(lambda cancelled: (go.wait(5), seen.append(cancelled.is_set())), cell_id='c0')
    bg.start(lambda cancelled: seen.append(cancelled.is_set()), cell_id='c1')
    while not bg._jobs[0].started: pass
    assert bg.cancel() and not bg.cancel('c0')             # the streaming one is stopped by its own Stop, not here
    go.set()
    assert bg.wait(5) and seen == [False, True]


@pytest.mark.parametrize('error', [ReplyBroken('The connection dropped.'), KeyError('a bug')])
def test_a_fault_goes_to_the_fault_callback_and_the_next_reply_runs(error):
    bg, faults, ran = Background(), [], []
    def job(cancelled): raise error
    bg.start(job, fault=faults.append)
    bg.start(lambda cancelled: ran.append(True), fault=faults.append)
    assert bg.wait(5) and faults == [error] and ran == [True]


def test_a_callback_that_fails_does_not_stop_the_others():
    bg, told = Background(), []
    bg.ended.extend([lambda: 1 / 0, lambda: told.append(True)])
    bg.start(lambda cancelled: None)
    assert bg.wait(5) and told == [True] and Background().wait(0) is True   # nothing started: nothing to wait for
