"""A reply's code blocks become cells that run (issue 22.4): Python as it is, a shell block under `%%bash`, any other
language no cell at all (Copy only). The rule (`cell_source`), the shell blocks of generated replies (`shell_cells`),
and `%%prompt --insert` in a bare InteractiveShell, whose inserted cell then runs (no kernel)."""

import pytest
from hypothesis import given, settings, strategies as st
from conftest import run
from boopiter_ext.tools.blocks import cell_source, python_blocks, shell_cells

SHELL, PYTHON = ['bash', 'sh', 'shell', 'BASH', 'Sh'], ['python', 'py', 'python3', 'ipython', 'Python']
OTHER = ['json', 'text', 'zsh', 'console', 'javascript', 'js', 'r', 'sql', 'toml', 'yaml', 'pycon', 'powershell', '']
SCRIPT = 'x=6\necho "six times seven is $((x * 7))"\n'   # a syntax error as Python


@pytest.mark.parametrize('lang', SHELL)
def test_a_shell_block_is_a_bash_cell(lang):
    assert cell_source(lang, SCRIPT) == '%%bash\n' + SCRIPT


@pytest.mark.parametrize('lang', PYTHON)
def test_a_python_block_is_a_cell_as_it_is(lang):
    assert cell_source(lang, 'print(1)\n') == 'print(1)\n'


@pytest.mark.parametrize('lang', OTHER)
def test_a_block_no_python_kernel_runs_is_no_cell(lang):
    assert cell_source(lang, SCRIPT) is None


LINE = st.text(st.sampled_from('abxyz 019$|"\'=-./()#*'), max_size=30)
BLOCK = st.tuples(st.sampled_from(SHELL + PYTHON + OTHER), st.lists(LINE, max_size=4))


@settings(max_examples=150, deadline=None)
@given(st.lists(BLOCK, min_size=1, max_size=6), st.booleans())
def test_the_shell_blocks_of_a_reply_are_its_bash_cells_in_order(blocks, quoted):
    "Generated replies: fences of many languages between paragraphs, at the top level or in a block quote."
    def fence(lang, lines):
        text = f'```{lang}\n' + ''.join(f'{ln}\n' for ln in lines) + '```'
        return '\n'.join('> ' + ln for ln in text.split('\n')) if quoted else text
    reply = '\n\n'.join(f'Step {i}:\n\n{fence(lang, lines)}' for i,(lang,lines) in enumerate(blocks))
    expected = ['%%bash\n' + ''.join(f'{ln}\n' for ln in lines) for lang,lines in blocks if lang.lower() in ('bash', 'sh', 'shell')]
    assert shell_cells(reply) == expected
    assert len(python_blocks(reply)) == sum(lang.lower() in ('python', 'py', 'python3', 'ipython') for lang,_ in blocks)


def test_an_unclosed_shell_block_is_no_cell():
    assert shell_cells('Run:\n\n```bash\nrm -rf build\n') == []        # cut short: never a cell
    assert shell_cells('```bash\nls\n```\n\n```bash\nrm -rf build\n') == ['%%bash\nls\n']


def inserted(shell):
    "The cell `set_next_input` asked for (a bare shell keeps it for its next prompt), as a list; then none."
    cell, shell.rl_next_input = shell.rl_next_input, None
    return [cell] if cell is not None else []


def test_insert_puts_a_shell_block_in_a_bash_cell_that_runs(shell, srv, monkeypatch, capsys):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    shell.run_line_magic('load_ext', 'boopiter_ext')
    srv.script(f'Run this in a shell:\n\n```bash\n{SCRIPT}```\n\nIt prints:\n\n```text\nsix times seven is 42\n```')
    assert run(shell, '%%prompt --insert -m qwen3:1.7b\nHow do I multiply in bash?').success
    [cell] = inserted(shell)
    assert cell == '%%bash\n' + SCRIPT.rstrip()                          # the text block is no cell
    capsys.readouterr()
    assert run(shell, cell).success                                      # the inserted cell runs, in bash
    assert capsys.readouterr().out == 'six times seven is 42\n'
    assert not run(shell, SCRIPT).success                                # as a Python cell it would not


def test_insert_with_python_and_shell_blocks_puts_the_python_ones(shell, srv, monkeypatch):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    shell.run_line_magic('load_ext', 'boopiter_ext')
    srv.script('```python\nprint(1)\n```\n\n```sh\nls\n```\n\n```python\nprint(2)\n```')
    assert run(shell, '%%prompt --insert -m qwen3:1.7b\ncode please').success
    assert inserted(shell) == ['print(1)\n\nprint(2)']                  # one cell that runs: the Python
    srv.script('```bash\necho a\n```\n\n```shell\necho b\n```')
    assert run(shell, '%%prompt --insert -m qwen3:1.7b\nshell please').success
    assert inserted(shell) == ['%%bash\necho a\n\necho b']              # shell only: one script


@pytest.mark.slow
def test_without_the_extension_a_bash_block_gets_run_buttons_that_run_it_in_bash(kernel, srv):
    "A frontend without the extension (VS Code): the widget fallback's Run runs the `%%bash` cell; JSON gets no button."
    srv.script(f'In a shell:\n\n```bash\n{SCRIPT}```\n\n```json\n{{"product": 42}}\n```')
    assert kernel.run('%%prompt -m qwen3:1.7b\nHow do I multiply in bash?', cell_id='c1').status == 'ok'
    run_button, _ = kernel.widget(_model_name='ButtonModel', description='Run')   # one: the JSON block gets none
    clicked = kernel.click(run_button)
    printed = ''.join(c.get('text', '') for t,kind,c in clicked.messages if kind == 'stream')
    assert 'six times seven is 42' in printed and 'SyntaxError' not in printed
