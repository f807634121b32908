"""References in a prompt (core/refs.py), without a kernel: what $`name` shows the model and what &`name` offers it, and
everything they refuse (issue 23.1): a variable named like a secret, a value shaped like one, private names and the
kernel's own; as tools, anything that is not the user's own named function (the kernel's, IPython's, ipykernel's,
boopiter's, command execution, a builtin's name), nor a name only a hidden cell defines."""

import os, shutil, subprocess
import pytest
from hypothesis import given, settings as hsettings, strategies as st
from boopiter_ext.core.refs import prompt_refs, summarize
from boopiter_ext.redact import SECRET
from boopiter_ext.tools.kernel import is_tool, user_variables

VALUE = 'hunter2-Zq81'   # what a secret holds: it must not reach the text


def total(n:int)->int:
    "Add up to `n`"
    return n * (n + 1) // 2


# ---- $`name`: variables

SECRET_WORDS = ['key', 'token', 'secret', 'passw', 'credential']


@hsettings(max_examples=80, deadline=None)
@given(word=st.sampled_from(SECRET_WORDS), before=st.sampled_from(['', 'api_', 'OPENAI_API_', 'db_', 'my', 'aws_secret_']),
       after=st.sampled_from(['', 's', 'word', '_1', 'ORD', '_value']), upper=st.booleans())
def test_a_variable_named_like_a_secret_is_never_sent_and_the_model_is_told_why(word, before, after, upper):
    name = before + word + after
    name = name.upper() if upper else name
    refs = prompt_refs(f'Why does $`{name}` fail with $`user`?', {name: VALUE, 'user': 'ann'})
    assert VALUE not in refs.text and refs.tools == {}
    assert f'`{name}` is named like a secret: not sent' in refs.notes
    assert f'Not shown to you: `{name}` is named like a secret.' in refs.text   # so the model does not guess at it
    assert "`user` = str, len 3: 'ann'" in refs.text                            # its neighbour is shown


def test_api_key_in_a_prompt_is_refused():
    ns = dict(api_key='sk-' + 'A1b2' * 6, OPENAI_API_KEY='sk-' + 'C3d4' * 6, db_password=VALUE, n=3)
    refs = prompt_refs('Call with $`api_key`, $`OPENAI_API_KEY` and $`db_password` for $`n` rows', ns)
    assert 'A1b2' not in refs.text and 'C3d4' not in refs.text and VALUE not in refs.text
    assert refs.notes == ['`api_key` is named like a secret: not sent', '`OPENAI_API_KEY` is named like a secret: not sent',
                          '`db_password` is named like a secret: not sent']
    assert refs.text.startswith('The variables the question names, as they are now:\n\n```\n`n` = int: 3\n```')


@pytest.mark.parametrize('value', ['sk-' + 'A1b2' * 6, 'ghp_' + 'Zy9' * 8, {'api_key': VALUE, 'host': 'db.local'},
                                   ['x', 'AKIA' + 'ABCD1234EFGH5678'], f'connect with token={VALUE}abcdef123456'])
def test_a_value_shaped_like_a_secret_under_a_plain_name_is_shown_without_it(value):
    refs = prompt_refs('What is in $`config`?', dict(config=value))
    assert '`config` = ' in refs.text and SECRET in refs.text
    assert not any(s in refs.text for s in ('A1b2A1b2', 'Zy9Zy9', VALUE, 'ABCD1234EFGH'))


def test_private_names_the_kernels_own_and_missing_ones_are_not_sent():
    ns = dict(_hidden=1, In=['', 'x = 1'], Out={}, get_ipython=lambda: None, exit=object(), os=os, n=2)
    refs = prompt_refs('Show $`_hidden`, $`In`, $`Out`, $`get_ipython`, $`exit`, $`os`, $`nope` and $`n`, $`n` again', ns)
    assert refs.notes == [f"$`{n}`: not sent (private, or the kernel's own)" for n in ('_hidden', 'In', 'Out', 'get_ipython',
                                                                                      'exit', 'os')] + \
                         ['$`nope`: no variable of that name in the kernel']
    assert refs.text == 'The variables the question names, as they are now:\n\n```\n`n` = int: 2\n```'   # once


def test_a_variable_only_a_hidden_cell_defines_is_not_sent():
    refs = prompt_refs('Use $`plan` and &`plan_fn`', dict(plan=VALUE, plan_fn=total), hidden={'plan', 'plan_fn'})
    assert VALUE not in refs.text and refs.tools == {}
    assert '`plan` is defined only by a hidden cell: not sent' in refs.notes
    assert '&`plan_fn`: not offered (`plan_fn` is defined only by a hidden cell)' in refs.notes


def test_a_summary_is_bounded_and_a_question_without_references_adds_nothing():
    assert prompt_refs('No references here, just $x and &y.', dict(x=1, y=total)).text == ''
    shown = summarize('word ' * 5000, limit=300)
    assert len(shown) < 400 and shown.startswith('str, len 25000: ')


# ---- &`name`: functions offered as tools for this prompt

def test_the_users_own_function_is_offered_with_its_signature():
    refs = prompt_refs('Use &`total` for 10', dict(total=total))
    assert refs.tools == {'total': total} and is_tool(total) and refs.notes == []
    assert refs.text.endswith('```python\ndef total(\n    n:int,\n)->int:\n    "Add up to `n`"\n```')
    assert refs.text.startswith("For this question you may also call these Python functions, already defined in the user's kernel.")


def run_cmd(cmd:str)->str:
    "Run a shell command"
    return cmd


def shell_out(cmd): return cmd


def get_ipython(): "Named as the kernel's own: refused by its name, wherever it comes from"


shell_out.__module__ = 'subprocess'   # a function from a module that runs commands


def test_what_is_not_the_users_own_function_is_never_offered():
    from IPython.core.display_functions import display
    from boopiter_ext import add_tool
    from boopiter_ext.tools.registry import notebook_tools, remove_tool
    ip = pytest.importorskip('IPython').core.interactiveshell.InteractiveShell
    ns = dict(display=display, add_tool=add_tool, remove_tool=remove_tool, notebook_tools=notebook_tools,
              get_ipython=get_ipython, rmtree=shutil.rmtree, check_output=subprocess.check_output, system=os.system,
              run_cmd=run_cmd, shell_out=shell_out, square=lambda x: x * x, n=3, init=ip.init_history, print=print)
    asked = ' '.join(f'&`{k}`' for k in ns) + ' &`missing`'
    refs = prompt_refs(f'Use {asked}', ns)
    assert refs.tools == {} and refs.text == ''
    why = {note.split('`')[1]: note.partition('not offered (')[2].rstrip(')') for note in refs.notes}
    assert set(why) == set(ns) | {'missing'}
    kernels = {k for k, w in why.items() if w == "the kernel's own, not a tool"}
    assert {'add_tool', 'remove_tool', 'notebook_tools', 'get_ipython', 'init'} <= kernels, why
    # `display` is IPython's: once a shell started in this process, a builtin's name too
    assert 'display' in kernels or why['display'].startswith('not a function with a name'), why
    assert all(why[k].startswith('never offered') for k in ('rmtree', 'check_output', 'system', 'run_cmd', 'shell_out')), why
    assert why['square'].startswith('not a function with a name') and why['print'].startswith('not a function with a name')
    assert why['n'] == 'a int, not a function' and why['missing'] == 'no function of that name in the kernel'


def test_the_kernels_own_functions_are_not_the_users_variables_either():
    from IPython.core.display_functions import display
    from boopiter_ext import add_tool
    def mine(x): return x
    ns = dict(display=display, add_tool=add_tool, mine=mine, n=1)
    assert list(user_variables(ns)) == ['mine', 'n']
