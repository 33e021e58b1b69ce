// Compiled once per provider by src/bridge/params.rs (`napi_run_script`): a script whose value is
// the function that hands a hook's params to Rust as one string: small plain params in the form
// params.rs parses (after a leading `~`), anything else as `JSON.stringify`'s text, or the number
// 0 for params too deep for `JSON.stringify` (its stack ran out). It is conversion only: it reads
// what `JSON.stringify` would read, in the order it reads it, and decides nothing.
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
  // params.rs passes its MAX_VALUES and MAX_DEPTH in.
  const objectPrototype = Object.prototype;
  const { stringify } = JSON;
  const TOO_DEEP = 0;
  const { getPrototypeOf, keys } = Object;
  const { isArray } = Array;
  const GIVE_UP = Symbol("give up");

  return (maxValues, maxDepth) => {
    let budget;
    let out;

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

    return (params) => {
      budget = maxValues;
      out = "~";
      try {
        if (write(params, 0)) return out;
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
  };
})();
