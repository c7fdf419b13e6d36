// A seeded xorshift32 generator for the golden tests, so a failing case reproduces: returns a
// function giving numbers in [0, 1).
export function xorshift32(seed) {
  let state = seed >>> 0;
  return () => {
    state ^= state << 13; state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5; state >>>= 0;
    return state / 4294967296;
  };
}
