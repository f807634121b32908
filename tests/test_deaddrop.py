"""The dead drop's files protocol and its `boopiter-deaddrop` command, without IPython."""

import json, os, subprocess, sys, threading, time
from pathlib import Path
import pytest
from boopiter_ext.faces import deaddrop_cli
from boopiter_ext.models import deaddrop as dd
from boopiter_ext.errors import DeadDropError, ReplyStalled

ROOT = Path(__file__).parent.parent
POLL = 0.02


@pytest.fixture
def root(tmp_path): return dd.deaddrop_root(environ={}, setting=str(tmp_path/'drop'))


@pytest.fixture
def sess(root):
    dd.new_session(root, 's1')
    return root, 's1'


def collect(events):
    "All content joined, and the done info."
    parts, info = [], None
    for kind,val in events:
        if kind == 'content': parts.append(val)
        else: info = val
    return ''.join(parts), info, len(parts)


def appender(path, pieces, pause=0.005):
    "A thread appending `pieces` (bytes) to `path`, flushing each, like a slow responder."
    def run():
        for p in pieces:
            with open(path, 'ab') as f: f.write(p)
            time.sleep(pause)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_root_env_wins_then_setting_then_home(tmp_path, monkeypatch):
    monkeypatch.setenv('HOME', str(tmp_path/'home'))
    assert dd.deaddrop_root(environ={}) == tmp_path/'home'/'dead_drop'
    assert dd.deaddrop_root(environ={}, setting=str(tmp_path/'s')) == tmp_path/'s'
    env = dict(BOOPITER_DEADDROP_DIR=str(tmp_path/'e'))
    r = dd.deaddrop_root(environ=env, setting=str(tmp_path/'s'))
    assert r == tmp_path/'e' and r.is_dir() and (r.stat().st_mode & 0o777) == 0o700


@pytest.mark.parametrize('sid', ['../x', 'a/b', '/etc', '..', '', 'x'*65, '.hidden', 'a..b', 'a\\b', 'sp ace', 'claude',
                                 'prompts', None])
def test_bad_session_ids_refused(sid, root):
    with pytest.raises(DeadDropError) as e: dd.valid_session(sid)
    assert '\n' not in str(e.value)
    with pytest.raises(DeadDropError): dd.new_session(root, sid)
    assert sorted(p.name for p in root.iterdir()) == []


def test_good_session_ids(root):
    for sid in ['review-42', 'a', 'A_b.c-9', 'x'*64]: assert dd.valid_session(sid) == sid
    assert dd.new_session(root, 'review-42') == root/'review-42'


@pytest.mark.parametrize('pid', ['../x', '123-abc', '123-ABCDEF12/..', '', '1-1a2b3c4d/../../etc'])
def test_bad_prompt_ids_refused(pid, sess):
    with pytest.raises(DeadDropError): dd.follow_reply(*sess, pid)
    with pytest.raises(DeadDropError): dd.reply_stream(*sess, pid, ['x'])


def test_list_sessions_needs_inbox_and_outbox(root):
    dd.new_session(root, 'b')
    dd.new_session(root, 'a')
    (root/'half'/'inbox').mkdir(parents=True)
    dd.drop_legacy(root, 'hi')   # prompts/ and responses/ are not sessions
    got = dd.list_sessions(root)
    assert [s for s,_ in got] == ['a', 'b'] and all(0 <= ago < 60 for _,ago in got)


def test_drop_prompt_is_one_atomic_bundle(sess):
    root, sid = sess
    meta = dict(notebook='a.ipynb', cell_id='c1', model='deaddrop/s1')
    pid = dd.drop_prompt(root, sid, 'Why?' + dd.REPLY_INSTRUCTION, meta,
                         images=[b'\x89PNG\r\n fake', b'\xff\xd8\xff jpeg'])
    inbox = root/sid/'inbox'
    assert [p.name for p in inbox.iterdir()] == [pid]
    assert dd.valid_prompt_id(pid) == pid
    b = inbox/pid
    assert sorted(p.name for p in b.iterdir()) == ['image-1.png', 'image-2.jpg', 'meta.json', 'prompt.md']
    meta = json.loads((b/'meta.json').read_text())
    assert meta['id'] == pid and meta['cell_id'] == 'c1' and meta['notebook'] == 'a.ipynb' and meta['created']
    assert (b/'prompt.md').read_text() == 'Why?' + dd.REPLY_INSTRUCTION and '---DONE---' in dd.REPLY_INSTRUCTION
    assert (b/'image-2.jpg').read_bytes() == b'\xff\xd8\xff jpeg'


def test_drop_prompt_needs_a_session(root):
    with pytest.raises(DeadDropError, match='boopiter-deaddrop new nope'): dd.drop_prompt(root, 'nope', 'hi')


def test_follow_reply_half_lines_and_half_characters(sess):
    root, sid = sess
    pid = dd.drop_prompt(root, sid, 'q')
    text = 'Héllo — wörld 🙂\nA line with ---DONE--- inside\n---\n```py\nx = 1\n```'
    raw = (text + '\n---MODEL: Tester <b>1</b>---\n---DONE---\n').encode()
    out = root/sid/'outbox'/f'{pid}.md'
    out.write_bytes(raw[:13])                              # 'Héllo — w' and half of 'ö'
    g = dd.follow_reply(root, sid, pid, poll=POLL, timeout=5)
    assert next(g) == ('content', 'Héllo — w')             # shown before the rest exists, without the half character
    t = appender(out, [raw[i:i+3] for i in range(13, len(raw), 3)], pause=0)   # splits lines and characters alike
    got, info, n = collect(g)
    t.join()
    assert 'Héllo — w' + got == text
    assert info == dict(model='Tester <b>1</b>')


def test_follow_reply_without_model_line(sess):
    root, sid = sess
    pid = dd.drop_prompt(root, sid, 'q')
    appender(root/sid/'outbox'/f'{pid}.md', [b'just this', b'\n---DO', b'NE---'])
    got, info, _ = collect(dd.follow_reply(root, sid, pid, poll=POLL, timeout=5))
    assert (got, info) == ('just this', {})


def test_one_megabyte_in_4k_appends(sess):
    root, sid = sess
    pid = dd.drop_prompt(root, sid, 'q')
    body = ''.join(f'line {i:06d} {"é" * 20}\n' for i in range(30000)).encode()[:1 << 20]
    raw = body + b'\n---DONE---\n'
    t = appender(root/sid/'outbox'/f'{pid}.md', [raw[i:i+4096] for i in range(0, len(raw), 4096)], pause=0)
    got, info, _ = collect(dd.follow_reply(root, sid, pid, poll=POLL, timeout=10))
    t.join()
    assert got.encode() == body.decode('utf-8', 'replace').encode()
    assert len(got.encode()) >= len(body) - 3   # at most a cut character at the 1 MB mark is replaced


def test_timeout_raises_reply_stalled_and_keeps_partial(sess):
    root, sid = sess
    pid = dd.drop_prompt(root, sid, 'q')
    (root/sid/'outbox'/f'{pid}.md').write_text('partial')
    events = []
    t0 = time.monotonic()
    with pytest.raises(ReplyStalled, match='re-run the cell'):
        for ev in dd.follow_reply(root, sid, pid, poll=POLL, timeout=0.2): events.append(ev)
    assert 0.2 <= time.monotonic() - t0 < 5                     # the bound, not a follower that waits on
    assert events == [('content', 'partial')]
    assert (root/sid/'outbox'/f'{pid}.md').read_text() == 'partial' and (root/sid/'inbox'/pid).is_dir()


def test_closing_the_follower_deletes_nothing(sess):
    root, sid = sess
    pid = dd.drop_prompt(root, sid, 'q')
    (root/sid/'outbox'/f'{pid}.md').write_text('some\nmore')
    g = dd.follow_reply(root, sid, pid, poll=POLL)
    assert next(g) == ('content', 'some\nmore')
    g.close()
    dd.cancel(root, sid, pid)
    assert (root/sid/'outbox'/f'{pid}.md').read_text() == 'some\nmore'
    assert sorted(p.name for p in (root/sid/'inbox'/pid).iterdir()) == ['cancelled', 'meta.json', 'prompt.md']


def test_cancelled_prompt_skipped_and_refused(sess):
    root, sid = sess
    p1 = dd.drop_prompt(root, sid, 'first')
    p2 = dd.drop_prompt(root, sid, 'second')
    assert dd.next_prompt(root, sid)['id'] == p1
    dd.cancel(root, sid, p1)
    nxt = dd.next_prompt(root, sid)
    assert nxt['id'] == p2 and nxt['prompt'] == 'second'
    with pytest.raises(DeadDropError, match='cancelled'): dd.reply_stream(root, sid, p1, ['late'])
    assert not (root/sid/'outbox'/f'{p1}.md').exists()
    assert dd.show(root, sid, p1)['status'] == 'cancelled'


def test_reply_for_unknown_prompt_refused(sess):
    root, sid = sess
    with pytest.raises(DeadDropError, match='No prompt'): dd.reply_stream(root, sid, '123-1a2b3c4d', ['x'])
    assert list((root/sid/'outbox').iterdir()) == []


def test_reply_stream_then_next_moves_on(sess):
    root, sid = sess
    p1, p2 = dd.drop_prompt(root, sid, 'a'), dd.drop_prompt(root, sid, 'b')
    path = dd.reply_stream(root, sid, p1, ['one ', b'two'], model='Me\nx')
    assert path.read_text() == 'one two\n---MODEL: Me x---\n---DONE---\n'
    assert dd.next_prompt(root, sid)['id'] == p2
    with pytest.raises(DeadDropError, match='already answered'): dd.reply_stream(root, sid, p1, ['again'])
    s = dd.show(root, sid, p1)
    assert (s['status'], s['reply'], s['model']) == ('answered', 'one two', 'Me x')
    assert collect(dd.follow_reply(root, sid, p1, poll=POLL, timeout=1))[:2] == ('one two', dict(model='Me x'))


def test_await_prompt_waits_and_times_out(sess):
    root, sid = sess
    assert dd.next_prompt(root, sid) is None
    t0 = time.monotonic()
    assert dd.await_prompt(root, sid, poll=POLL, timeout=0.1) is None
    assert time.monotonic() - t0 >= 0.1
    threading.Timer(0.1, dd.drop_prompt, (root, sid, 'late one')).start()
    p = dd.await_prompt(root, sid, poll=POLL, timeout=5)
    assert p['prompt'] == 'late one' and p['images'] == []


def test_two_sessions_never_see_each_others_replies(root):
    for s in ('a', 'b'): dd.new_session(root, s)
    pa, pb = dd.drop_prompt(root, 'a', 'qa'), dd.drop_prompt(root, 'b', 'qb')
    assert dd.next_prompt(root, 'a')['prompt'] == 'qa' and dd.next_prompt(root, 'b')['prompt'] == 'qb'
    dd.reply_stream(root, 'b', pb, ['for b'])
    with pytest.raises(DeadDropError): dd.reply_stream(root, 'a', pb, ['for b, sent to a'])   # pb is not a's prompt
    dd.reply_stream(root, 'a', pa, ['for a'])
    assert collect(dd.follow_reply(root, 'a', pa, poll=POLL, timeout=1))[0] == 'for a'
    assert collect(dd.follow_reply(root, 'b', pb, poll=POLL, timeout=1))[0] == 'for b'
    with pytest.raises(ReplyStalled): collect(dd.follow_reply(root, 'a', pb, poll=POLL, timeout=0.1))


def test_find_pending_reattaches(sess):
    root, sid = sess
    pid = dd.drop_prompt(root, sid, 'ask', dict(cell_id='c1'))
    assert dd.find_pending(root, sid, 'ask', 'c1') == pid
    assert dd.find_pending(root, sid, 'ask', 'c2') is None
    assert dd.find_pending(root, sid, 'ask again', 'c1') is None
    (root/sid/'outbox'/f'{pid}.md').write_text('half an ans')   # partially answered: still re-attach
    assert dd.find_pending(root, sid, 'ask', 'c1') == pid
    with open(root/sid/'outbox'/f'{pid}.md', 'a') as f: f.write('wer\n---DONE---\n')
    assert dd.find_pending(root, sid, 'ask', 'c1') is None
    p2 = dd.drop_prompt(root, sid, 'ask', dict(cell_id='c1'))
    dd.cancel(root, sid, p2)
    assert dd.find_pending(root, sid, 'ask', 'c1') is None


def test_legacy_route_end_to_end(root):
    pid = dd.drop_legacy(root, 'old style?')
    assert [p.name for p in (root/'prompts').iterdir()] == [pid]
    assert (root/'prompts'/pid).read_text() == 'old style?'
    appender(root/'responses'/pid, [b'Old ', b'answer\n---MOD', b'EL: Claude---\n', b'---DONE---\n'])
    got, info, _ = collect(dd.follow_legacy(root, pid, poll=POLL, timeout=5))
    assert (got, info) == ('Old answer', dict(model='Claude'))


# The command line, as a real subprocess

def cli(root, *args, **kw):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop('BOOPITER_DEADDROP_DIR', None)
    return subprocess.run([sys.executable, '-m', 'boopiter_ext.faces.deaddrop_cli', '--root', str(root), *args],
                          capture_output=True, text=True, env=env, timeout=30, **kw)


@pytest.mark.heavy
def test_cli_new_list_next_json_show(root):
    r = cli(root, 'new', 'review-42')
    assert r.returncode == 0 and 'deaddrop/review-42' in r.stderr
    assert cli(root, 'list').stdout.startswith('review-42\t')
    r = cli(root, 'next', 'review-42')
    assert r.returncode == 1 and 'No prompt waiting' in r.stderr
    pid = dd.drop_prompt(root, 'review-42', 'Explain ünïcode', dict(cell_id='c9'), images=[b'\x89PNG x'])
    p = json.loads(cli(root, 'next', 'review-42', '--json').stdout)
    assert p['id'] == pid and p['prompt'] == 'Explain ünïcode' and p['meta']['cell_id'] == 'c9'
    assert Path(p['images'][0]).read_bytes() == b'\x89PNG x'
    assert cli(root, 'next', 'review-42').stdout.splitlines()[:2] == [pid, 'Explain ünïcode']
    assert f'{pid} (waiting)' in cli(root, 'show', 'review-42', pid).stdout


@pytest.mark.heavy
def test_cli_errors_are_one_line_exit_2(root):
    for args in [('new', '../x'), ('next', 'missing'), ('reply', 'missing', '1-1a2b3c4d'), ('bogus',), ('show', 'a')]:
        r = cli(root, *args, input='')
        assert r.returncode == 2, args
        assert len(r.stderr.strip().splitlines()) == 1 and 'Traceback' not in r.stderr, r.stderr


def test_cli_help_explains_every_argument():
    parser = deaddrop_cli._parser()
    commands = next(a for a in parser._actions if a.dest == 'cmd').choices
    for name, sub in commands.items():
        for a in sub._actions:
            assert a.help, f'`boopiter-deaddrop {name}` argument {a.dest} has no help'
    text = commands['reply'].format_help()
    assert 'the session the prompt is in' in text and 'as `next` prints it' in text


def test_cli_next_wait_timeout(root):
    dd.new_session(root, 's')
    r = cli(root, 'next', 's', '--wait', '--timeout', '0.2')
    assert r.returncode == 1 and r.stdout == ''


def test_cli_reply_from_a_pipe_streams_to_a_follower(root):
    dd.new_session(root, 's')
    pid = dd.drop_prompt(root, 's', 'q')
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, '-m', 'boopiter_ext.faces.deaddrop_cli', '--root', str(root), 'reply', 's',
                             pid, '--model', 'Pipe <1>'], stdin=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    events = []
    def follow(): events.extend(dd.follow_reply(root, 's', pid, poll=POLL, timeout=20))
    t = threading.Thread(target=follow)
    t.start()
    raw = b'First part, half a line\nsecond line \xc3\xbcn\xc3\xaf'
    def shown(): return ''.join(v for k,v in list(events) if k == 'content')
    for chunk,now in [(raw[:12], 'First part, '), (raw[12:21], 'half a li'), (raw[21:35], 'ne\nsecond line'),
                      (raw[35:-1], ' ün'), (raw[-1:], 'ï')]:
        before = shown()
        proc.stdin.write(chunk)
        proc.stdin.flush()
        deadline = time.monotonic() + 20   # each write shows up on its own, before the next is made
        while shown() != before + now and time.monotonic() < deadline: time.sleep(0.01)
        assert shown() == before + now
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0, proc.stderr.read()
    proc.stderr.close()
    t.join(timeout=30)
    contents = [v for k,v in events if k == 'content']
    assert ''.join(contents) == raw.decode() and len(contents) >= 5
    assert events[-1] == ('done', dict(model='Pipe <1>'))
    assert cli(root, 'reply', 's', pid, input='again').returncode == 2


@pytest.mark.parametrize('text', ['plain\ntext\n\nwith blank lines', '---\nrule ---DONE--- inline\n --- \n---MODEL',
                                  'x', '', '---DONE--- not yet\n---DONE----'])
def test_terminators_any_split(text):
    import random
    rnd = random.Random(5)
    raw = text + '\n---MODEL: M 2---\n---DONE---\n'
    for _ in range(200):
        t, out, i, done = dd._Terminators(), [], 0, False
        while not done:
            n = rnd.randint(1, 6)
            s, done = t.feed(raw[i:i+n])
            out.append(s)
            i += n
        assert ''.join(out) == text and t.model == 'M 2'


def test_reply_stops_when_cancelled_midway(sess):
    root, sid = sess
    pid = dd.drop_prompt(root, sid, 'q')
    def chunks():
        yield 'first part\n'
        dd.cancel(root, sid, pid)
        yield 'never written'
    with pytest.raises(DeadDropError, match='cancelled'): dd.reply_stream(root, sid, pid, chunks())
    assert (root/sid/'outbox'/f'{pid}.md').read_text() == 'first part\n'


def test_public_names():
    import inspect
    for m in (dd, deaddrop_cli):
        own = {k for k,v in vars(m).items() if not k.startswith('_') and not inspect.ismodule(v)
               and getattr(v, '__module__', m.__name__) == m.__name__}
        assert set(m.__all__) == own, m.__name__


def test_re_attaching_needs_the_same_notebook_and_a_cell_id(sess):
    root, sid = sess
    pid = dd.drop_prompt(root, sid, 'q', dict(cell_id='c1', notebook='/nb/a.ipynb'))
    assert dd.find_pending(root, sid, 'q', 'c1', '/nb/a.ipynb') == pid
    assert dd.find_pending(root, sid, 'q', 'c1', '/nb/copy-of-a.ipynb') is None   # a copy asks for itself
    assert dd.find_pending(root, sid, 'q', None, '/nb/a.ipynb') is None


def test_a_saved_binding_may_name_only_sessions_that_exist_here(sess, monkeypatch):
    from boopiter_ext.core.binding import screen_binding
    from boopiter_ext.settings import load_settings
    root, sid = sess
    monkeypatch.setenv('BOOPITER_DEADDROP_DIR', str(root))
    s = load_settings(environ={})
    assert screen_binding(dict(model=f'deaddrop/{sid}'), s)[0] == dict(model=f'deaddrop/{sid}')
    assert screen_binding(dict(model='deaddrop/invented'), s)[0] == {}
    assert screen_binding(dict(model='deaddrop/claude'), s)[0] == {}   # no legacy folder here


# Files that are not what they should be: refused or ignored in one line, never read endlessly, never a traceback

def in_thread(f, timeout=5):
    "Run `f` on a thread; its result or exception, or a failure if it blocks (a FIFO opened for reading would)."
    out = {}
    def run():
        try: out['value'] = f()
        except BaseException as e: out['error'] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), f'{f} blocked'
    if 'error' in out: raise out['error']
    return out['value']


@pytest.mark.parametrize('kind', ['device link', 'fifo', 'link out of the session', 'directory'])
def test_a_reply_that_is_not_a_plain_file_is_refused(sess, tmp_path, kind):
    root, sid = sess
    pid = dd.drop_prompt(root, sid, 'q', dict(cell_id='c1'))
    path = root/sid/'outbox'/f'{pid}.md'
    outside = tmp_path/'elsewhere.md'
    outside.write_text('not yours\n---DONE---\n')
    {'device link': lambda: path.symlink_to('/dev/zero'), 'fifo': lambda: os.mkfifo(path),
     'link out of the session': lambda: path.symlink_to(outside), 'directory': lambda: path.mkdir()}[kind]()
    with pytest.raises(DeadDropError, match='Refusing') as e:
        in_thread(lambda: collect(dd.follow_reply(root, sid, pid, poll=POLL, timeout=5)))
    assert '\n' not in str(e.value) and 'plain files' in str(e.value)
    assert in_thread(lambda: dd.find_pending(root, sid, 'q', 'c1')) is None   # never re-attached to
    with pytest.raises(DeadDropError, match='Refusing'): in_thread(lambda: dd.show(root, sid, pid))
    with pytest.raises(DeadDropError, match='Refusing'): in_thread(lambda: dd.reply_stream(root, sid, pid, ['x']))
    r = cli(root, 'show', sid, pid)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and 'Traceback' not in r.stderr
    assert outside.read_text() == 'not yours\n---DONE---\n'


def test_a_legacy_response_that_is_not_a_plain_file_is_refused(root):
    pid = dd.drop_legacy(root, 'old style?')
    os.mkfifo(root/'responses'/pid)
    with pytest.raises(DeadDropError, match='Refusing'): in_thread(lambda: collect(dd.follow_legacy(root, pid, poll=POLL)))


def test_a_link_to_a_file_inside_the_session_is_followed(sess):
    root, sid = sess
    pid = dd.drop_prompt(root, sid, 'q')
    (root/sid/'real.md').write_text('linked answer\n---DONE---\n')
    (root/sid/'outbox'/f'{pid}.md').symlink_to(root/sid/'real.md')
    assert collect(dd.follow_reply(root, sid, pid, poll=POLL, timeout=2))[:2] == ('linked answer', {})


BAD_META = dict(list=b'[1, 2]', string=b'"hello"', number=b'7', nested=b'[' * 50_000 + b']' * 50_000,
                deep_object=b'{"a":' * 30_000 + b'1' + b'}' * 30_000, not_utf8=b'{"cell_id": "c1\xff\xfe"}',
                truncated=b'{"cell_id": "c1"', huge=b'{"cell_id": "c1", "x": "' + b'y' * (1 << 17) + b'"}')


@pytest.mark.parametrize('bad', list(BAD_META))
def test_meta_that_is_not_a_small_json_object_is_no_metadata(sess, bad):
    root, sid = sess
    pid = dd.drop_prompt(root, sid, 'q', dict(cell_id='c1'))
    (root/sid/'inbox'/pid/'meta.json').write_bytes(BAD_META[bad])
    assert dd.find_pending(root, sid, 'q', 'c1') is None          # no cell id to match: a new prompt is asked instead
    assert dd.next_prompt(root, sid)['meta'] == {} and dd.show(root, sid, pid)['meta'] == {}
    r = cli(root, 'next', sid, '--json')
    assert r.returncode == 0 and json.loads(r.stdout)['meta'] == {} and r.stderr == ''
    r = cli(root, 'show', sid, pid, '--json')
    assert r.returncode == 0 and json.loads(r.stdout)['meta'] == {} and r.stderr == ''


def test_meta_json_as_a_fifo_or_a_link_is_no_metadata(sess, tmp_path):
    root, sid = sess
    p1, p2 = dd.drop_prompt(root, sid, 'q', dict(cell_id='c1')), dd.drop_prompt(root, sid, 'q', dict(cell_id='c1'))
    (root/sid/'inbox'/p1/'meta.json').unlink()
    os.mkfifo(root/sid/'inbox'/p1/'meta.json')
    (tmp_path/'m.json').write_text(json.dumps(dict(cell_id='c1', id=p2)))
    (root/sid/'inbox'/p2/'meta.json').unlink()
    (root/sid/'inbox'/p2/'meta.json').symlink_to(tmp_path/'m.json')
    assert in_thread(lambda: dd.find_pending(root, sid, 'q', 'c1')) is None
    assert in_thread(lambda: dd.next_prompt(root, sid))['meta'] == {}


def test_ids_in_meta_are_checked_and_values_kept_plain(sess):
    root, sid = sess
    pid = dd.drop_prompt(root, sid, 'q')
    (root/sid/'inbox'/pid/'meta.json').write_text(json.dumps(dict(id='../../etc', cell_id='c 1/..', notebook='a.ipynb',
                                                                  model=['x'], nested={'a': 1}, created='today')))
    assert dd.next_prompt(root, sid)['meta'] == dict(notebook='a.ipynb', created='today')
    (root/sid/'inbox'/pid/'meta.json').write_text(json.dumps(dict(id=pid, cell_id='c-1_A')))
    assert dd.next_prompt(root, sid)['meta'] == dict(id=pid, cell_id='c-1_A')


def test_a_prompt_md_that_is_not_utf8_or_not_a_file(sess):
    root, sid = sess
    p1, p2 = dd.drop_prompt(root, sid, 'q', dict(cell_id='c1')), dd.drop_prompt(root, sid, 'r', dict(cell_id='c1'))
    (root/sid/'inbox'/p1/'prompt.md').write_bytes(b'q\xff')
    assert dd.find_pending(root, sid, 'q', 'c1') is None and dd.find_pending(root, sid, 'r', 'c1') == p2
    assert dd.next_prompt(root, sid)['prompt'] == 'q\ufffd'
    (root/sid/'inbox'/p1/'prompt.md').unlink()
    os.mkfifo(root/sid/'inbox'/p1/'prompt.md')
    assert in_thread(lambda: dd.next_prompt(root, sid))['id'] == p2   # skipped, not blocking the queue


def test_a_linked_bundle_is_not_a_prompt(sess, tmp_path):
    root, sid = sess
    (tmp_path/'b').mkdir()
    (tmp_path/'b'/'prompt.md').write_text('planted')
    (root/sid/'inbox'/'1-1a2b3c4d').symlink_to(tmp_path/'b')
    assert dd.next_prompt(root, sid) is None
    with pytest.raises(DeadDropError, match='No prompt'): dd.reply_stream(root, sid, '1-1a2b3c4d', ['x'])


def test_terminators_never_hold_a_long_line():
    t = dd._Terminators()
    out, done = t.feed('---MODEL: ' + 'x' * 100_000)
    assert not done and len(t.buf) == 0 and out == '---MODEL: ' + 'x' * 100_000
    t = dd._Terminators()
    out = ''.join(t.feed(' ')[0] for _ in range(2000))
    assert len(t.buf) <= dd._MAX_TERMINATOR and len(out) + len(t.buf) == 2000
    assert dd._Terminators().feed('text\n   ---DONE---  \n') == ('text', True)   # a short terminator line still ends it


def test_show_reads_a_huge_reply_in_bounded_pieces(sess):
    root, sid = sess
    pid = dd.drop_prompt(root, sid, 'q')
    with open(root/sid/'outbox'/f'{pid}.md', 'wb') as f: f.truncate(dd._MAX_SHOW + (1 << 20))   # sparse: cheap to make
    s = dd.show(root, sid, pid)
    assert s['status'] == 'replying' and len(s['reply']) < dd._MAX_SHOW + 100 and s['reply'].endswith('MB]')
