"""core/background.py without a kernel: one reply at a time, in the starting cell's context, its fault told, its end
told after it stops counting as running (the kernel's side: tests/test_background.py)."""

import contextvars, threading
import pytest
from boopiter_ext.core.background import Background
from boopiter_ext.errors import ReplyBroken

PARENT = contextvars.ContextVar('parent', default=None)   # as ipykernel keeps a request's parent header


def test_the_job_runs_in_the_starting_context_one_at_a_time_and_its_end_is_told():
    bg, go, seen, ends = Background(), threading.Event(), [], []
    bg.ended.append(lambda: ends.append(bg.running))
    PARENT.set('cell 3')
    def job():
        go.wait(5)
        seen.append(PARENT.get())
    bg.start(job, cell_id='c3')
    PARENT.set('cell 4')                                   # another cell runs meanwhile
    assert bg.running and bg.cell_id == 'c3' and bg.wait(0.05) is False
    with pytest.raises(RuntimeError, match='wait'): bg.start(job)
    go.set()
    assert bg.wait(5) and not bg.running and bg.cell_id is None
    assert seen == ['cell 3'] and ends == [False]            # its output goes to its own cell; ended once, not running


@pytest.mark.parametrize('error', [ReplyBroken('The connection dropped.'), KeyError('a bug')])
def test_a_fault_goes_to_the_fault_callback_and_the_next_reply_can_start(error):
    bg, faults = Background(), []
    def job(): raise error
    bg.start(job, fault=faults.append)
    assert bg.wait(5) and faults == [error]
    bg.start(lambda: None, fault=faults.append)            # a failing callback or job leaves it usable
    assert bg.wait(5) and faults == [error]


def test_a_callback_that_fails_does_not_stop_the_others():
    bg, told = Background(), []
    bg.ended.extend([lambda: 1 / 0, lambda: told.append(True)])
    bg.start(lambda: None)
    assert bg.wait(5) and told == [True] and Background().wait(0) is True   # nothing started: nothing to wait for
