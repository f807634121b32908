"""What the menu shows is what is (issue 22.3), without a kernel: a prompt that could not reach its server marks that
source offline in the catalog at once, one that got an answer from a source marked offline has it listed again, and
the context the menu names is the window the next request asks for."""

import pytest
from ollama_server import OllamaTestServer
from boopiter_ext.core.assistant import Assistant
from boopiter_ext.core.menu import answering, menu_state
from boopiter_ext.models.catalog import Catalog
from boopiter_ext.models.router import Router
from boopiter_ext.settings import load_settings

OLLAMA_IDS = ['gemma3:4b', 'qwen3:1.7b', 'smollm2:135m']


def settings_for(host, **cell): return load_settings(cell=cell, environ={'OLLAMA_HOST': host})


@pytest.fixture
def listed():
    "A catalog that listed the test server's models once; (catalog, settings, server)."
    with OllamaTestServer() as srv:
        router = Router()
        s = settings_for(srv.host)
        cat = Catalog(router)
        assert [e.id for e in cat.refresh(s).entries if e.source == 'ollama'] == OLLAMA_IDS
        try: yield cat, s, srv
        finally: router.close()


def test_a_prompt_that_cannot_reach_ollama_marks_its_models_offline_at_once(listed):
    cat, s, _ = listed
    why = 'Ollama is not reachable at http://127.0.0.1:1 (host from OLLAMA_HOST). Start it with `ollama serve`.'
    assert cat.seen('qwen3:1.7b', s, why) == 'down'
    last = cat.last
    assert last.problems == {'ollama': why} and last.auto is None
    assert [(e.id, e.offline) for e in last.entries if e.source == 'ollama'] == [(m, why) for m in OLLAMA_IDS]
    assert all(not e.offline for e in last.entries if e.source != 'ollama')   # the embedded model stays usable
    assert cat.current(s) is last                                            # what the menu reads, with no refresh
    state = menu_state(s, cat.current(s))
    assert state['problems'] == {'ollama': why} and all(m.get('offline') == why for m in state['models'][:3])
    assert cat.seen('qwen3:1.7b', s, why) is None                            # already said: no new state to push
    assert cat.seen(None, s, why) is None                                    # the automatic choice is Ollama's too


def test_an_answer_from_a_source_marked_offline_lists_it_again(listed):
    cat, s, _ = listed
    assert cat.seen('qwen3:1.7b', s, '') is None                             # online and answering: nothing changes
    cat.seen('gemma3:4b', s, 'down for a moment')
    assert cat.seen('gemma3:4b', s, '') == 'up'                              # the caller lists again, and this one
    listing = cat.refresh(s)                                                 # waits for Ollama as for any live source
    assert listing.problems == {} and listing.auto is not None
    assert [e.id for e in listing.entries if e.source == 'ollama' and not e.offline] == OLLAMA_IDS


def test_only_servers_that_list_models_are_marked(listed):
    cat, s, _ = listed
    assert cat.source_of('local/smollm2-135m', s) == 'local' and cat.source_of('@gpu1/qwen3:8b', s) == '@gpu1'
    assert cat.source_of('ollama_chat/openai/x', s) == 'ollama' and cat.source_of('', s) == 'ollama'
    assert cat.source_of('openai/x', s) is None                              # no api_base: a cloud id
    assert cat.source_of('openai/x', settings_for('127.0.0.1:1', api_base='http://127.0.0.1:2/v1')) == 'endpoint'
    for model in ('anthropic/claude-x', 'deaddrop/claude'):
        assert cat.seen(model, s, 'unreachable') is None and cat.last.problems == {}


def test_a_prompt_s_failure_and_success_tell_the_menu(tmp_path):
    "Through the assistant, as a prompt ends: the state listeners hear of each change, the menu says it."
    with OllamaTestServer() as srv:
        a = Assistant(type('Cells', (), {'current': None, 'cells': lambda self: []})(), {},
                      notebook=lambda: tmp_path/'n.ipynb')
        told = []
        a.state_listeners.append(lambda: told.append(a.catalog.last.problems.copy()))
        s = settings_for(srv.host)
        a.catalog.refresh(s)
        from boopiter_ext.errors import OllamaUnreachable, ReplyStalled
        a._seen('qwen3:1.7b', s, ReplyStalled('slow'))                      # a slow model is not a down server
        assert told == []
        a._seen('qwen3:1.7b', s, OllamaUnreachable('not reachable'))
        assert told == [{'ollama': 'not reachable'}]
        a._seen('qwen3:1.7b', s, None)                                      # then an answer: listed again, then told
        import time
        deadline = time.monotonic() + 10
        while len(told) < 2 and time.monotonic() < deadline: time.sleep(0.01)
        assert told == [{'ollama': 'not reachable'}, {}]
        a.close()


@pytest.mark.parametrize('size,expect', [(0, 4096), (8192, 8192), (65536, 40960)])
def test_the_menu_names_the_context_window_the_request_uses(size, expect, tmp_path):
    with OllamaTestServer() as srv:
        a = Assistant(type('Cells', (), {'current': None, 'cells': lambda self: []})(), {})
        s = settings_for(srv.host, model='qwen3:1.7b', **({'context_size': size} if size else {}))
        listing = a.catalog.refresh(s)
        who = answering(s, listing, lambda m: a.menu_window(m, s, listing))
        assert who['window'] == expect and who['context_length'] == 40960   # the request's num_ctx; the model's most
        assert a.window('qwen3:1.7b', 10, {'context_length': 40960}, s) == expect   # what a small prompt asks for
        a.close()
