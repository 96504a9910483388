// Runs a Python snippet in the notebook's kernel without touching the notebook (silent, no
// history) and returns the JSON object the snippet printed after MARKER. The kernel side is
// elastic_lite itself: the extension never runs a second Python.
import { Kernel, KernelMessage } from '@jupyterlab/services';

// Not ASCII (the §) on purpose: the line a snippet prints is MARKER + JSON, one str, and
// Pyodide hands an ASCII str of 64 characters or more that lies above 2 GiB of its heap to JS
// as NULs; a str with any other character crosses whole (py/elastic_lite/_jsbytes.py).
export const MARKER = '__ELASTIC_LITE_RESULT\u00a7__';

/** What a snippet printed: a report of elastic_lite.host, or {ok: false, error} when the
 * snippet itself failed (elastic_lite missing, the kernel gone). */
export interface IKernelResult {
  ok: boolean;
  error?: string;
  [key: string]: any;
}

export async function runInKernel(kernel: Kernel.IKernelConnection, code: string): Promise<IKernelResult> {
  let stdout = '';
  let stderr = '';
  const future = kernel.requestExecute({
    code,
    silent: true,
    store_history: false,
    allow_stdin: false,
    stop_on_error: false
  });
  future.onIOPub = (msg: KernelMessage.IIOPubMessage) => {
    if (KernelMessage.isStreamMsg(msg)) {
      if (msg.content.name === 'stdout') {
        stdout += msg.content.text;
      } else {
        stderr += msg.content.text;
      }
    }
  };
  const reply = await future.done;
  const content = reply.content as KernelMessage.IExecuteReplyMsg['content'];
  const line = stdout.split('\n').find(l => l.startsWith(MARKER));
  if (line) {
    return JSON.parse(line.slice(MARKER.length)) as IKernelResult;
  }
  if (content.status === 'error') {
    return { ok: false, error: `${content.ename}: ${content.evalue}` };
  }
  return {
    ok: false,
    error: `the kernel gave no result (stderr: ${stderr.trim().slice(-500) || 'empty'})`
  };
}
