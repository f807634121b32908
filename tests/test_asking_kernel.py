"""Asking from code in a real kernel with boopiter loaded: `ask` is in the namespace, answers as the notebook's prompt
cells do, reads the notebook above only on request, and a batch shows one progress bar updated in place."""

import pytest
from kernels import KernelSession

pytestmark = pytest.mark.slow
MODEL = 'qwen3:1.7b'


def test_ask_in_a_notebook_reads_the_cells_above_on_request_and_a_batch_shows_its_progress(srv, tmp_path):
    srv.responder = lambda body: 'saw the cell' if 'secret_number + 1' in str(body['messages']) else 'saw no cell'
    with KernelSession(tmp_path, env={'OLLAMA_HOST': srv.host}) as k:
        assert k.run('%load_ext boopiter_ext').status == 'ok'
        assert k.run('secret_number = 41\nprint(secret_number + 1)').text == '42\n'
        assert k.value(f"ask('What is secret_number?', {MODEL!r})") == "'saw no cell'"   # the question alone
        assert k.value(f"ask('What is secret_number?', {MODEL!r}, context=True)") == "'saw the cell'"
        res = k.run(f"out = ask_all('Item {{}}', range(30), {MODEL!r}); len(out), sorted(set(out))")
        bars = [o for o in res.outputs if 'text/html' in o.get('data', {})]
        assert len(bars) == 1   # one display, updated in place
        final = bars[0]['data']['text/html']
        assert '30 items in' in final and '30 answered (30 asked, 0 reused)' in final
        assert res.outputs[-1]['data']['text/plain'] == "(30, ['saw no cell'])"
        res = k.run("ask('x', 'nosuch:7b')")
        assert res.status == 'error' and res.error['ename'] == 'OllamaModelNotFound'
        assert k.run('1 + 1').status == 'ok'
