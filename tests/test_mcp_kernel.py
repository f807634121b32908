"""MCP servers as tool sources in a real kernel: declared in your settings, proposed but not granted by a project's,
turned on by code you run, called by the model through python blocks, one process for many prompts, and gone with
`%unload_ext`."""

import os, time
from pathlib import Path
import pytest
from test_toolloop import block, loop_of, statuses

pytestmark = pytest.mark.slow   # every test here starts a real kernel

SERVER = Path(__file__).with_name('mcp_servers.py')


@pytest.fixture
def project(kernel, tmp_path):
    """Your settings declare the test server as source `demo`; the kernel's folder (a project) lists it in `tools`, which
    only proposes it. The kernel reads your settings under this test's XDG_CONFIG_HOME (tests/conftest.py)."""
    (yours := tmp_path / 'xdg' / 'boopiter').mkdir(parents=True, exist_ok=True)
    (yours / 'settings.ini').write_text(f'[boopiter.mcp.demo]\ncommand = python {SERVER}\n'
                                        f'env = BOOP_MCP_LOG={tmp_path / "starts.log"}\n')
    (tmp_path / 'settings.ini').write_text('[boopiter]\ntools = kernel, demo\n')
    return kernel


def starts(tmp_path): return len((tmp_path / 'starts.log').read_text().split()) if (tmp_path / 'starts.log').exists() else 0


def test_a_project_proposes_your_server_but_only_you_turn_it_on(project, srv, tmp_path):
    listed = project.run('%boop tools').text
    assert 'off  demo     MCP server runs `python ' in listed and 'asks for the demo tool' in listed
    assert starts(tmp_path) == 0   # proposed, not granted: nothing started
    listed = project.run('%boop tools demo on').text
    assert 'on   demo' in listed and 'add' in listed.split('offered:')[1] and starts(tmp_path) == 1
    assert project.value('add(2, 3)') == '5' and project.value("type(weather('Oslo')).__name__") == "'dict'"


def test_the_model_calls_a_servers_tool_and_many_prompts_share_one_process(project, srv, tmp_path):
    project.run('%boop tools demo on')
    srv.script('Adding.\n\n' + block('add(47, 23)'))
    srv.script('The sum is 70.')
    res = project.run('%%prompt --auto -m qwen3:1.7b\nWhat is 47 + 23? Use the tool.')
    assert res.status == 'ok' and loop_of(res)['stop'] == 'answered' and statuses(res) == ['ok']
    first, second = srv.chats()[-2:]
    assert 'def add(\n    a:int,' in first['messages'][0]['content'] and '# Changes something' in first['messages'][0]['content']
    assert '```\n70\n```' in second['messages'][-1]['content']
    srv.script(block("remember('buy milk')"))   # not read-only, and nobody asked for a write
    srv.script('Not done.')
    res = project.run('%%prompt --auto -m qwen3:1.7b\nWhat is on my list?')
    assert statuses(res) != ['ok'] and not (tmp_path / 'notes.txt').exists()
    def fds(): return int(project.value("len(__import__('os').listdir('/proc/self/fd'))"))
    for i in range(25):
        if i == 5: before = fds()   # once warm: the HTTP pool's connections are open
        srv.script(f'Answer {i}.')
        assert project.run(f'%%prompt -m qwen3:1.7b\nQuestion {i}?').status == 'ok'
    assert starts(tmp_path) == 1   # 27 prompts, one server process
    assert fds() <= before + 1   # no descriptor leaked by 20 prompts (one for a connection the pool may open anew)
    pid = int((tmp_path / 'starts.log').read_text().split()[0])
    project.run('%unload_ext boopiter_ext')
    assert project.value("'add' in dir()") == 'False'
    for _ in range(50):
        try: os.kill(pid, 0)
        except ProcessLookupError: break
        time.sleep(0.1)
    else: pytest.fail('the server outlived %unload_ext')


def test_an_image_a_tool_returns_goes_to_a_vision_model_only(project, srv, tmp_path):
    project.run('%boop tools demo on')
    for model, sent in (('gemma3:4b', 1), ('qwen3:1.7b', 0)):
        srv.script(block('dot()'))
        srv.script('A single dot.')
        res = project.run(f'%%prompt --auto -m {model}\nShow me the dot.')
        assert res.status == 'ok' and statuses(res) == ['ok'], res.text
        last = srv.chats()[-1]['messages'][-1]
        assert '[image image/png, 75 bytes]' in last['content'] and len(last.get('images') or []) == sent
    shown = project.run('dot()').outputs[0]['data']   # in a cell, the image is shown
    assert shown['text/plain'] == '[image image/png, 75 bytes]' and shown['image/png']
