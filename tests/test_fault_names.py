"""The frontend knows boopiter's faults by name (js/src/cells/fault.ts draws them as paragraphs): every error class
boopiter raises, and no other, is in its list; and each renders as the one line the frontend recognises."""

import re
from pathlib import Path
import pytest
from boopiter_ext import errors

FAULT_TS = Path(__file__).parent.parent/'js'/'src'/'cells'/'fault.ts'


def subclasses(cls):
    for c in cls.__subclasses__():
        yield c
        yield from subclasses(c)


def test_the_frontend_lists_every_boopiter_error_and_no_other():
    block = re.search(r'FAULT_NAMES[^=]*= new Set\(\[(.*?)\]\)', FAULT_TS.read_text(), re.S)[1]
    listed = set(re.findall(r"'(\w+)'", block))
    assert listed == {'BoopError', *(c.__name__ for c in subclasses(errors.BoopError))}


@pytest.mark.parametrize('cls', [errors.BoopError, *subclasses(errors.BoopError)])
def test_each_renders_as_the_one_line_the_frontend_recognises(cls):
    e = cls('Start it with `ollama serve` at http://127.0.0.1:11434.')
    assert e._render_traceback_() == [f'{cls.__name__}: {e}']   # fault.ts `faultOf`: `${ename}: ${evalue}`, alone
