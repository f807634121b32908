"""Vision and reasoning in real kernels: figures on the wire, `think` only where it applies, reasoning kept apart.

The test server refuses what real Ollama refuses: images for a model without `vision` (its runner's
"missing data required for image input") and `think` for one without `thinking`.
"""

import json, re, subprocess, sys
from pathlib import Path
import nbformat, pytest
from conftest import run
from images_util import decoded
from boopiter_ext.faces.run import run_notebook

pytestmark = pytest.mark.slow
RED, GREEN, BLUE = (200, 30, 30), (30, 200, 30), (30, 30, 200)
FIGURES = [  # a big matplotlib figure, an IPython.display.Image, a PIL image's repr: three kinds of image output
    "import matplotlib.pyplot as plt\nfig = plt.figure(figsize=(20, 10), dpi=100, facecolor=(200/255, 30/255, 30/255))\n"
    "plt.plot([0, 1, 2], [0, 1, 0])\nplt.show()",
    "import io\nfrom PIL import Image as PILImage\nfrom IPython.display import Image, display\nbuf = io.BytesIO()\n"
    "PILImage.new('RGB', (300, 200), (30, 30, 200)).save(buf, 'PNG')\ndisplay(Image(buf.getvalue()))",
    "PILImage.new('RGB', (120, 80), (30, 200, 30))",
]


def user_msg(srv): return srv.last_chat()['messages'][-1]
def details(res): return res.reply['data']['text/markdown'].split('<summary>Reply details')[1]


def plot_three(kernel):
    for src in FIGURES:
        res = kernel.run(src)
        assert res.status == 'ok' and any('image/png' in o.get('data', {}) for o in res.outputs), res.outputs


def test_a_vision_model_sees_every_figure_in_notebook_order_scaled(kernel, srv):
    plot_three(kernel)
    res = kernel.run('%%prompt -m gemma3:4b\nWhat is odd about these?')
    assert res.status == 'ok', res.text
    images = user_msg(srv)['images']
    got = [decoded(i) for i in images]
    (w, h), sizes = got[0][0], [size for size,_,_ in got]
    assert w == 1024 and 500 < h < 540 and sizes[1:] == [(300, 200), (120, 80)]  # the wide 2:1 figure scaled down
    assert [fmt for _,fmt,_ in got] == ['PNG'] * 3 and got[1][2] == BLUE and got[2][2] == GREEN
    assert user_msg(srv)['content'].count('[image: image/png') == 3
    assert re.search(rf'Images: 3 sent \(1024×{h} \(scaled from \d+×\d+\), 300×200, 120×80\)', details(res))
    assert res.reply['metadata']['boopiter']['images'] == [f'1024×{h}', '300×200', '120×80']


def test_a_text_model_gets_placeholders_and_no_image(kernel, srv):
    plot_three(kernel)
    res = kernel.run('%%prompt -m smollm2:135m\nWhat is odd about these?')
    assert res.status == 'ok', res.text   # the server answers 500 if an image reaches a model without vision
    chat = srv.last_chat()
    assert not any('images' in m for m in chat['messages'])
    assert user_msg(srv)['content'].count('[image/png output omitted]') == 3
    assert 'Images: 3 not sent: the model takes no images' in details(res)


def test_size_and_budget_settings_apply_newest_first(kernel, srv):
    plot_three(kernel)
    kernel.run('%config BoopMagics.image_size = 100')
    kernel.run('%config BoopMagics.max_images = 2')
    res = kernel.run('%%prompt -m gemma3:4b\nAnd now?')
    assert [decoded(i)[0] for i in user_msg(srv)['images']] == [(100, 67), (100, 67)]   # the two newest
    assert '[image/png output omitted: too many images]' in user_msg(srv)['content']
    assert '1 not sent: over the budget of 2 images (`max_images`)' in details(res)


def test_a_prompt_can_show_an_image_file_by_a_link(kernel, srv):
    kernel.run("from PIL import Image as PILImage\nPILImage.new('RGB', (64, 48), (30, 30, 200)).save('sketch.png')")
    res = kernel.run('%%prompt -m gemma3:4b\nWhat does ![my sketch](sketch.png) show?')
    assert res.status == 'ok', res.text
    assert [decoded(i)[:2] for i in user_msg(srv)['images']] == [((64, 48), 'PNG')]
    res = kernel.run('%%prompt -m gemma3:4b\nAnd ![](../outside.png)?')
    assert 'images' not in user_msg(srv) and "1 not sent: `../outside.png` is outside the notebook's folder" in \
        details(res).replace('&#x27;', "'")


def test_think_goes_only_to_thinking_models_and_says_when_it_is_left_out(kernel, srv):
    kernel.run("%config BoopMagics.think = 'h'")
    res = kernel.run('%%prompt -m gemma3:4b\nhi')
    assert res.status == 'ok', res.text   # the server answers 400 to `think` for a model without `thinking`
    assert 'think' not in srv.last_chat()
    assert 'effort h not sent: gemma3:4b is not a thinking model' in details(res)
    srv.script('Fine.', thinking='Let me think.')
    res = kernel.run('%%prompt -m qwen3:1.7b\nhi')
    assert srv.last_chat()['think'] in (True, 'high') and 'Reasoning: effort high' in details(res)
    assert res.reply['metadata']['boopiter']['effort'] == 'h'
    res = kernel.run('%%prompt -m gemma3:4b --think l\nhi')
    assert res.status == 'error' and 'not a thinking model' in res.text   # asked for in the cell: refused


def test_the_reasoning_model_and_its_effort_are_named(kernel, srv):
    kernel.run('%boop reasoning qwen3:1.7b m')
    srv.script('Yes.', thinking='one two three')
    res = kernel.run('%%prompt\nDeep question?')
    assert srv.last_chat()['model'] == 'qwen3:1.7b' and srv.last_chat()['think'] in (True, 'medium')
    assert 'Reasoning: the reasoning model, effort medium' in details(res)
    assert res.reply['metadata']['boopiter']['reasoning_model'] == 'qwen3:1.7b'
    assert 'Tokens: ' in details(res) and '(of which ~3 reasoning)' in details(res)


@pytest.mark.parametrize('reply', [dict(reply='The answer.', thinking='secret plan'),
                                   dict(reply='<think>secret plan</think>The answer.')])
def test_reasoning_is_kept_in_the_output_and_never_sent_back(kernel, srv, reply):
    srv.script(**reply)
    res = kernel.run('%%prompt -m qwen3:1.7b\nFirst?')
    data = res.reply['data']
    assert data['text/plain'] == 'The answer.'
    md = data['text/markdown']
    assert md.index('secret plan') < md.index('The answer.') and '<details class="boopiter-reasoning">' in md
    kernel.run('%%prompt -m qwen3:1.7b\nSecond?')
    sent = json.dumps(srv.last_chat())
    assert 'The answer.' in sent and 'secret plan' not in sent and '<think>' not in sent


def test_an_unclosed_think_keeps_the_answer(kernel, srv):
    srv.script('<think>Checking the numbers. The answer is 42.')
    res = kernel.run('%%prompt -m qwen3:1.7b\nWhat is it?')
    assert res.status == 'ok' and res.reply['data']['text/plain'] == 'Checking the numbers. The answer is 42.'
    assert 'never closed it' in res.reply['data']['text/markdown']


def test_an_openai_compatible_endpoint_gets_images_where_declared_and_reports_reasoning_tokens(kernel, srv):
    plot_three(kernel)
    kernel.run(f"%config BoopMagics.api_base = '{srv.url}/v1'")
    kernel.run("%config BoopMagics.vision_models = 'openai/gemma3*, openai/other'")
    srv.script('Three pictures.', thinking='a b c d')
    res = kernel.run('%%prompt -m openai/gemma3:4b\nWhat do you see?')
    assert res.status == 'ok', res.text
    parts = user_msg(srv)['content']
    urls = [p['image_url']['url'] for p in parts if p['type'] == 'image_url']
    assert len(urls) == 3 and all(u.startswith('data:image/png;base64,') for u in urls)
    assert decoded(urls[0].partition(',')[2])[0][0] == 1024
    assert '(of which 4 reasoning)' in details(res)   # the server's own count: exact, no ~
    kernel.run('%%prompt -m openai/smollm2:135m\nAnd you?')
    msgs = srv.last_chat()['messages']
    assert all(isinstance(m['content'], str) for m in msgs) and '[image/png output omitted]' in msgs[1]['content']


def test_terminal_ipython_prints_reasoning_before_the_answer(shell, srv, monkeypatch, capsys):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    shell.run_line_magic('load_ext', 'boopiter_ext')
    srv.script('The answer.', thinking='Weighing it up.')
    assert run(shell, '%%prompt -m qwen3:1.7b\nWell?').success
    out = capsys.readouterr().out
    assert out.index('reasoning: Weighing it up.') < out.index('\n\nThe answer.') < out.index('[qwen3:1.7b')


def test_nbconvert_markdown_keeps_code_tags_and_folds_the_reasoning(srv, tmp_path, monkeypatch):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    nb = nbformat.v4.new_notebook(metadata={'kernelspec': {'name': 'python3', 'display_name': 'Python 3',
                                                            'language': 'python'}})
    nb.cells = [nbformat.v4.new_code_cell('%load_ext boopiter_ext'),
                nbformat.v4.new_code_cell('%%prompt -m qwen3:1.7b\nHow do I square x?')]
    nbformat.write(nb, tmp_path/'ask.ipynb')
    srv.script('Square it with \\(x^2\\):\n\n```python\nx ** 2\n```\n', thinking='Easy one.')
    assert run_notebook(tmp_path/'ask.ipynb', tmp_path/'out.ipynb', write=lambda s: None)
    jupyter = Path(sys.executable).with_name('jupyter')
    res = subprocess.run([str(jupyter), 'nbconvert', '--to', 'markdown', str(tmp_path/'out.ipynb')],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    md = (tmp_path/'out.md').read_text()
    assert '```python\nx ** 2\n```' in md and 'Square it with $x^2$' in md
    assert md.index('<details class="boopiter-reasoning">') < md.index('Easy one.') < md.index('Square it with')
