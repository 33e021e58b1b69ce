// The JavaScript half of a provider's hook caller (src/bridge/caller.rs compiles it once per
// provider with `napi_run_script`): a script whose value gives `caller(native)`, which makes
// `callHook(hook, params, onOutput?)` around the native half. It is conversion only and decides nothing:
//
// - In: the params become one string for Rust: small plain params holding a long string in the
//   form src/bridge/params.rs parses (after a leading `~`), anything else as `JSON.stringify`'s text
//   (which throws what it throws, a BigInt's TypeError), or the number 0 for params too deep for
//   `JSON.stringify` (its stack ran out). It reads what `JSON.stringify` would read, in the order
//   it reads it.
// - Out: the native half answers a synchronous hook's outcome as JSON text, parsed here, or, when
//   the outcome holds long strings, as the object itself (src/bridge/outcome.rs); any other hook's
//   as a promise of the object.
//
// Why this half is JavaScript: reading the params and parsing the outcome are what V8 does fast,
// and doing them here costs a plain call each, where calling them from Rust paid for entering
// JavaScript from native code twice a hook call (~2,000-3,000 instructions each, counted with
// callgrind).
//
// The form, one token after another (lengths in UTF-16 units, as JS counts them):
//   n | t | f                    null, true, false
//   d<number text>;              a finite number as JSON writes it (non-finite ones are `n`)
//   s<length>:<characters>       a string, unescaped
//   [ <value>... ]               an array (`undefined`, functions and symbols as `n`)
//   { s<key> <value>... }        an object (members JSON leaves out are not written)
// A string is copied once, where `JSON.stringify` would escape it and serde_json unescape it.
(() => {
  "use strict";
  const objectPrototype = Object.prototype;
  const { parse, stringify } = JSON;
  const TOO_DEEP = 0;
  const { getPrototypeOf, keys } = Object;
  const { isArray } = Array;
  const GIVE_UP = Symbol("give up");

  // caller.rs passes params.rs's MAX_VALUES, MAX_DEPTH and LONG_STRING in, and takes
  // `caller(native)`; `read` alone is for the tests that hold the form to JSON.stringify's text
  // (src/debug.rs).
  return (maxValues, maxDepth, longString) => {
    let budget;
    let out;

    // Whether the params hold a string the form is worth writing for: one `JSON.stringify` would
    // escape at length. Without one, its text costs less than the form (CreateOS's six short
    // strings: ~7,000 instructions a validate call less, counted with callgrind). Anything the
    // form would give up on answers false at once.
    const holdsLongString = (value, depth) => {
      if (--budget < 0 || depth > maxDepth) return false;
      if (typeof value === "string") return value.length >= longString;
      if (typeof value !== "object" || value === null || value.toJSON !== undefined) return false;
      if (isArray(value)) {
        for (let index = 0; index < value.length; index++) {
          if (holdsLongString(value[index], depth + 1)) return true;
        }
        return false;
      }
      const prototype = getPrototypeOf(value);
      if (prototype !== objectPrototype && prototype !== null) return false;
      for (const name of keys(value)) {
        if (holdsLongString(value[name], depth + 1)) return true;
      }
      return false;
    };

    // Appends `value` and answers true, or answers false (nothing appended) where JSON leaves
    // it out.
    const write = (value, depth) => {
      if (--budget < 0) throw GIVE_UP;
      switch (typeof value) {
        case "string":
          out += "s" + value.length + ":" + value;
          return true;
        case "number":
          out += Number.isFinite(value) ? "d" + value + ";" : "n";
          return true;
        case "boolean":
          out += value ? "t" : "f";
          return true;
        case "undefined":
        case "function":
        case "symbol":
          return false;
        case "object":
          if (value === null) {
            out += "n";
            return true;
          }
          if (depth >= maxDepth || value.toJSON !== undefined) throw GIVE_UP;
          if (isArray(value)) {
            const length = value.length;
            if (length > budget) throw GIVE_UP;
            out += "[";
            for (let index = 0; index < length; index++) {
              if (!write(value[index], depth + 1)) out += "n";
            }
            out += "]";
            return true;
          }
          {
            const prototype = getPrototypeOf(value);
            if (prototype !== objectPrototype && prototype !== null) throw GIVE_UP;
            const names = keys(value);
            if (names.length > budget) throw GIVE_UP;
            out += "{";
            for (const name of names) {
              const before = out;
              out += "s" + name.length + ":" + name;
              if (!write(value[name], depth + 1)) out = before;
            }
            out += "}";
            return true;
          }
        default:
          // A BigInt.
          throw GIVE_UP;
      }
    };

    // `formAlways` (tests only) writes the form for any params it can carry.
    const read = (params, formAlways = false) => {
      budget = maxValues;
      let worthIt = formAlways;
      try {
        worthIt ||= holdsLongString(params, 0);
      } catch {
        // What a getter or a proxy threw: JSON.stringify meets it again.
      }
      budget = maxValues;
      out = "~";
      try {
        if (worthIt && write(params, 0)) return out;
      } catch {
        // GIVE_UP, or what a getter or a proxy threw: JSON.stringify meets it again.
      } finally {
        out = "";
      }
      try {
        return stringify(params);
      } catch (error) {
        // Its stack ran out; anything else (a BigInt's TypeError) is thrown as it is.
        if (error instanceof RangeError) return TOO_DEEP;
        throw error;
      }
    };

    const caller = (native) => {
      const callHook = (hook, params, onOutput) => {
        const outcome = native(hook, params === undefined || params === null ? null : read(params), onOutput);
        return typeof outcome === "string" ? parse(outcome) : outcome;
      };
      return callHook;
    };
    return { read, caller };
  };
})();
