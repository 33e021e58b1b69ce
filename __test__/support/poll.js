// The one bounded poll of the JS tests: a state read again and again until it is what the test
// waits for, or until a deadline. No test waits on a condition without a deadline, and none
// sleeps a fixed time in place of a condition.

/**
 * Reads `read()` (sync or async) every `everyMs` until `done(value)` holds or `withinMs` has
 * passed, and returns the last value read either way: the test asserts on it, so a failure
 * shows what was left rather than only that time ran out.
 *
 * @template T
 * @param {() => T | Promise<T>} read
 * @param {(value: T) => boolean} done
 * @param {{ withinMs?: number, everyMs?: number }} [options] 10 s and 25 ms unless given
 * @returns {Promise<T>}
 */
export async function pollUntil(read, done, { withinMs = 10_000, everyMs = 25 } = {}) {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() >= deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
