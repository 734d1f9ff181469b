/**
 * The package's errors: a script's declared error, the same refused before any I/O, a
 * reply that is not what the header says, and a transaction the server ran piecemeal.
 *
 * @module
 */

/** Every error this package throws itself (the connection's own errors pass as they are). */
export class RedisPatternsError extends Error {
  override name = "RedisPatternsError";
}

/**
 * A script answered one of the error codes its header declares (`@error`).
 *
 * Nothing was written: every script checks its input before its first write. `code` is the
 * reply's first word (`BAD_TOKEN`), `script` the script's name (`identity_lock/release`),
 * `detail` the rest of the reply. The script's `@error` lines say what each code means.
 */
export class ScriptError extends RedisPatternsError {
  override name = "ScriptError";
  readonly script: string;
  readonly code: string;
  readonly detail: string;

  constructor(script: string, code: string, detail: string) {
    super(`${script}: ${code} ${detail}`.trimEnd());
    this.script = script;
    this.code = code;
    this.detail = detail;
  }
}

/**
 * A key or argument the script's header refuses, caught before anything was sent.
 *
 * `code` is the one the script would answer for it (`BAD_ARGS` for a count, `BAD_<NAME>`
 * for an argument, `BAD_KEYS` for a key name), so one `catch` of `ScriptError` handles a bad
 * call whichever side refuses it; `what` names the argument or key at fault.
 */
export class InvalidInput extends ScriptError {
  override name = "InvalidInput";
  readonly what: string;

  constructor(script: string, code: string, what: string, why: string) {
    super(script, code, `${what} ${why}`);
    this.what = what;
  }
}

/**
 * A reply that is not of the type the script's `@return` line declares: the server runs
 * another version of the script, or the data was written by something else.
 */
export class UnexpectedReply extends RedisPatternsError {
  override name = "UnexpectedReply";
}

/**
 * The server refused a transaction's `MULTI` (a user without the `multi` permission) and
 * then ran its commands one by one, outside any transaction: some or all of them may have
 * been applied. Nothing was sent again.
 */
export class RanOutsideTransaction extends RedisPatternsError {
  override name = "RanOutsideTransaction";
  readonly refused: Error;
  readonly commands: number;

  constructor(refused: Error, commands: number) {
    super(
      `MULTI was refused (${refused.message}), so the ${commands} commands of the transaction ` +
        "ran one by one, outside any transaction; grant the user +multi +exec",
    );
    this.refused = refused;
    this.commands = commands;
  }
}
