/**
 * How a reply's code block becomes a notebook cell that runs in the kernel (IPython): Python as it is, a shell script
 * under `%%bash`; any other language no cell at all (Copy only): inserted into a Python cell it would be a syntax
 * error. The kernel's `cell_source` (boopiter_ext/tools/blocks.py) says the same; here an untagged block counts as
 * Python, as it always did. Pure, unit-tested.
 */

/** The languages of a Python cell (an untagged block is taken for Python). */
const PYTHON = new Set(['', 'python', 'python3', 'py', 'ipython', 'ipython3']);
/** The languages `%%bash` runs (a POSIX sh script runs in bash). */
const SHELL = new Set(['bash', 'sh', 'shell']);

/** The magic a shell block runs under. */
export const SHELL_MAGIC = '%%bash';

/** The source of a cell that runs `code`, a block of `language`, in the kernel; null when no cell does. */
export function cellSource(language: string, code: string): string | null {
  const lang = language.toLowerCase();
  if (PYTHON.has(lang)) {
    return code;
  }
  return SHELL.has(lang) ? `${SHELL_MAGIC}\n${code}` : null;
}
