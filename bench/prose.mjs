// What the server benchmarks share: seeded filler prompts and medians with their spread.

// `count` words from a small list, the same for the same seed: prompts of a known length that
// share no prefix unless a caller puts one in front.
const words = ['river', 'stone', 'light', 'north', 'garden', 'quiet', 'number', 'engine', 'paper', 'window'];
export function prose(seed, count) {
  let state = seed >>> 0 || 1;
  return Array.from({ length: count }, () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return words[(state >>> 16) % words.length];
  }).join(' ');
}

export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// "median (min–max)" with `digits` decimals.
export const spread = (xs, digits) =>
  `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`;
