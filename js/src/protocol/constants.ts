/**
 * The names both halves of boopiter agree on: the comm target, the protocol version, the mime types, the notebook
 * metadata key, and the code that loads the kernel half.
 */

export const COMM_TARGET = 'boopiter';
export const PROTOCOL_VERSION = 1;
export const REPLY_MIME = 'application/vnd.boopiter.reply+json';
export const SETTINGS_MIME = 'application/vnd.boopiter.settings+json';
/** What the kernel adds to its ipywidget outputs (the widget menu, Run buttons): `{version, kind}`; drawn instead. */
export const WIDGET_MIME = 'application/vnd.boopiter.widget+json';
/** The notebook metadata key: `{binding?: Binding}`; its presence means the notebook uses boopiter. */
export const METADATA_KEY = 'boopiter';
/**
 * What the page runs (silently) to load boopiter without a cell: before a prompt cell in a kernel that has not loaded
 * it, and for a notebook that used it before. `%load_ext boopiter_ext`, except that the notebook's own later
 * `%load_ext boopiter_ext` cell adopts this load quietly (`boopiter_ext._frontend_load`; a kernel with an older
 * boopiter_ext gets the plain `%load_ext`). The menu's "Load boopiter" runs the notebook's own load cell instead.
 */
export const LOAD_CODE =
  '(lambda m, ip: m._frontend_load(ip) if hasattr(m, "_frontend_load") else ' +
  'ip.run_line_magic("load_ext", m.__name__))(__import__("boopiter_ext"), get_ipython())';
