"""boopiter_ext: SolveIt-style prompt cells in any Jupyter kernel, answered by local models.

    %load_ext boopiter_ext
    %%prompt
    Why does the loop above print the same value twice?

Also loads from `c.InteractiveShellApp.extensions = ['boopiter_ext']`. Loading registers `%%prompt`
and `%boop`, puts `ask`, `ask_all` and `stream` in the namespace (never over a name of yours), starts recording cells
for the context, and imports nothing heavy: requests, litellm and
the embedded model are imported on first use (litellm warms up on a background thread).
"""

__version__ = '0.1.0'
__all__ = ['__version__', 'load_ipython_extension', 'unload_ipython_extension', 'BoopMagics', 'Assistant', 'OllamaClient',
           'Router', 'LocalModel', 'Cell', 'build_context', 'order_cells', 'load_settings', 'Reply', 'pump',
           'BoopError', 'Catalog', 'ollama_loaded', 'unload_ollama_model', 'sync_ollama_loaded', 'add_tool', 'side_effect',
           'get_tool_list', 'tools_system_prompt', 'ask', 'ask_all', 'stream', 'prompt_llm', 'stream_llm_reply', 'Failed',
           'on_tool_error', 'add_mcp_server']

import importlib, os
from .errors import BoopError

_LAZY = dict(BoopMagics='.faces.magics', Assistant='.core.assistant', OllamaClient='.models.ollama', Router='.models.router',
             LocalModel='.models.local', Cell='.context.build', build_context='.context.build', order_cells='.context.build',
             load_settings='.settings', Reply='.models.stream', pump='.models.stream', Catalog='.models.catalog',
             ollama_loaded='.models.ollama', unload_ollama_model='.models.ollama', sync_ollama_loaded='.models.ollama',
             add_tool='.tools.registry', side_effect='.tools.registry', get_tool_list='.faces.api',
             tools_system_prompt='.tools.registry', ask='.faces.api', ask_all='.faces.api', stream='.faces.api',
             prompt_llm='.faces.api', stream_llm_reply='.faces.api', Failed='.core.batch',
             on_tool_error='.tools.registry', add_mcp_server='.tools.mcp')
_COST_MAP = 'LITELLM_LOCAL_MODEL_COST_MAP'
_frontend_loaded = None   # the `BoopMagics` the frontend loaded (`_frontend_load`) and no `%load_ext` adopted yet


def __getattr__(name):
    if name not in _LAZY: raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    return getattr(importlib.import_module(_LAZY[name], __name__), name)

def __dir__(): return sorted(__all__)


def _jupyter_labextension_paths():
    "Where JupyterLab and Notebook 7 find the prebuilt frontend half (`jupyter labextension develop` reads it)."
    return [{'src': 'labextension', 'dest': 'boopiter-ext'}]


def load_ipython_extension(ip):
    "Register `%%prompt` and `%boop`, and start recording cells; a load the frontend made is adopted as it is."
    global _frontend_loaded
    active = ip.magics_manager.registry.get('BoopMagics')
    if active is not None and active is _frontend_loaded:
        _frontend_loaded = None   # the user's `%load_ext` now owns it: `%unload_ext` undoes it
        return
    if active is not None: unload_ipython_extension(ip)   # loaded outside the extension manager: one set, not two
    from .faces.magics import BoopMagics
    magics = BoopMagics(shell=ip)
    magics.set_cost_map = _COST_MAP not in os.environ
    if magics.set_cost_map: os.environ[_COST_MAP] = 'True'  # litellm would otherwise download a price map at import
    ip.register_magics(magics)
    magics.start()
    _quiet_again(ip)


def _quiet_again(ip):
    """`%load_ext boopiter_ext` run again while boopiter is loaded (the notebook's own load cell, on Run All in the same
    kernel) says nothing: boopiter is loaded, as the cell asks. IPython would print "already loaded ... %reload_ext"
    under it every time; `%reload_ext` and `%unload_ext` work as ever."""
    mgr = getattr(ip, 'extension_manager', None)
    if mgr is None or 'load_extension' in vars(mgr): return
    def load_extension(module_str):
        if module_str == __name__ and module_str in mgr.loaded and 'BoopMagics' in ip.magics_manager.registry: return None
        return type(mgr).load_extension(mgr, module_str)
    mgr.load_extension = load_extension


def _frontend_load(ip):
    """Load the extension for the frontend's "Load boopiter" (js/src/protocol/constants.ts `LOAD_CODE`) without marking it loaded
    in IPython: the notebook's own `%load_ext boopiter_ext` cell then adopts it quietly, not "already loaded"."""
    global _frontend_loaded
    if 'BoopMagics' in ip.magics_manager.registry: return   # loaded already (`%load_ext`, ipython_config, or by us)
    load_ipython_extension(ip)
    _frontend_loaded = ip.magics_manager.registry.get('BoopMagics')


def unload_ipython_extension(ip):
    "Remove every magic, hook and callback `load_ipython_extension` added."
    global _frontend_loaded
    magics = ip.magics_manager.registry.pop('BoopMagics', None)
    if magics is None: return
    mgr = getattr(ip, 'extension_manager', None)
    if mgr is not None: vars(mgr).pop('load_extension', None)   # `_quiet_again` undone
    if magics is _frontend_loaded: _frontend_loaded = None
    for kind,name in (('cell', 'prompt'), ('line', 'boop')):
        if getattr(ip.magics_manager.magics[kind].get(name), '__self__', None) is magics: del ip.magics_manager.magics[kind][name]
    if magics in ip.configurables: ip.configurables.remove(magics)
    magics.stop()
    if magics.set_cost_map: os.environ.pop(_COST_MAP, None)
