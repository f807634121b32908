"""`boopiter-deaddrop`: answer prompt cells through the dead drop from a terminal (a person, a coding agent).

    boopiter-deaddrop new review-42                    # the brain menu now lists deaddrop/review-42
    boopiter-deaddrop next review-42 --wait            # prints the oldest waiting prompt: its id, then its text
    boopiter-deaddrop reply review-42 PROMPT_ID --model "me" < answer.md   # or `... | boopiter-deaddrop reply ...`

`next` exits with status 1 when no prompt is waiting (after `--timeout` with `--wait`); any error is one line on
stderr and status 2. `--root DIR` picks the dead-drop folder. The protocol and its Python API are models/deaddrop.py.
"""

__all__ = ['main']

import json, sys
from ..models.deaddrop import ago, deaddrop_root, list_sessions, new_session, next_prompt, reply_stream, show
from ..errors import DeadDropError


def _print_prompt(p, as_json):
    if as_json: return print(json.dumps(p, ensure_ascii=False))
    print(p['id'])
    print(p['prompt'])
    for img in p['images']: print(f'[image] {img}')


def _chunks(stream):
    "What arrives on `stream` (a binary file), as soon as it arrives, so a pipe streams."
    read = getattr(stream, 'read1', stream.read)
    while c := read(65536): yield c


def _configured_dir()->str:
    "The `deaddrop_dir` a notebook in this folder would use (your settings.ini), so both sides meet."
    from ..settings import load_settings
    return load_settings()['deaddrop_dir']


def _run(args):
    root = deaddrop_root(environ={}, setting=args.root) if args.root else deaddrop_root(setting=_configured_dir())
    if args.cmd == 'new':
        d = new_session(root, args.id)
        print(f'Session {args.id} ready at {d}; pick deaddrop/{args.id} in the brain menu', file=sys.stderr)
    elif args.cmd == 'list':
        for sid,secs in list_sessions(root): print(f'{sid}\t{ago(secs)} ago')
    elif args.cmd == 'next':
        p = next_prompt(root, args.id, wait=args.wait, timeout=args.timeout)
        if p is None:
            print(f'No prompt waiting in session {args.id}', file=sys.stderr)
            return 1
        _print_prompt(p, args.json)
    elif args.cmd == 'reply':
        reply_stream(root, args.id, args.prompt_id, _chunks(sys.stdin.buffer), model=args.model)
    elif args.cmd == 'show':
        p = show(root, args.id, args.prompt_id)
        if args.json: print(json.dumps(p, ensure_ascii=False))
        else: print(f'{p["id"]} ({p["status"]})\n{p["prompt"]}\n--- reply ---\n{p["reply"]}')
    return 0


def _parser():
    import argparse
    class _Parser(argparse.ArgumentParser):
        def error(self, message): self.exit(2, f'{self.prog}: {message} (see --help)\n')
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument('--root', default=argparse.SUPPRESS,
                        help='dead-drop folder (default: $BOOPITER_DEADDROP_DIR, else ~/dead_drop)')
    p = _Parser(prog='boopiter-deaddrop', description='Answer boopiter prompt cells through files.', parents=[common])
    sub = p.add_subparsers(dest='cmd', required=True, parser_class=_Parser)
    SID = 'the new session\'s id: 1 to 64 letters, digits, `.`, `_` or `-`; notebooks pick it as model `deaddrop/ID`'
    PID = 'its id, as `next` prints it (`<time>-<8 hex>`)'
    sub.add_parser('new', parents=[common], help='start a session').add_argument('id', help=SID)
    sub.add_parser('list', parents=[common], help='list sessions and when each was last active')
    nx = sub.add_parser('next', parents=[common], help='print the oldest waiting prompt: its id, then its text')
    nx.add_argument('id', help='the session to look in')
    nx.add_argument('--wait', action='store_true', help='wait until a prompt arrives')
    nx.add_argument('--json', action='store_true', help='print one JSON object (id, prompt, meta, images)')
    nx.add_argument('--timeout', type=float, help='seconds to wait at most')
    rp = sub.add_parser('reply', parents=[common], help='stream stdin as the reply, then end it')
    rp.add_argument('id', help='the session the prompt is in')
    rp.add_argument('prompt_id', help=f'the prompt to answer: {PID}')
    rp.add_argument('--model', help='who answers, shown as "<name> (dead drop)"')
    sh = sub.add_parser('show', parents=[common], help='print a prompt, its state and its reply so far')
    sh.add_argument('id', help='the session the prompt is in')
    sh.add_argument('prompt_id', help=f'the prompt to show: {PID}')
    sh.add_argument('--json', action='store_true', help='print one JSON object')
    return p


def main(argv=None):
    "`boopiter-deaddrop`: errors are one line on stderr and exit status 2."
    args = _parser().parse_args(argv)
    args.root = getattr(args, 'root', None)
    try: code = _run(args)
    except (DeadDropError, OSError, ValueError, AttributeError) as e:   # ValueError: a prompt.md that is not UTF-8
        print(f'boopiter-deaddrop: {e}', file=sys.stderr)
        code = 2
    except KeyboardInterrupt: code = 130
    sys.exit(code)


if __name__ == '__main__': main()
