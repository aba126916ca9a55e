//! CPython's `random` module, as far as `random.seed(n)` / `random.Random(n)` with an integer
//! seed followed by `getrandbits` and `shuffle` go: the Mersenne Twister MT19937 (Matsumoto and
//! Nishimura, 1998) seeded by `init_by_array` with the seed's 32-bit words, least significant
//! first, exactly as `random_seed` in CPython's `_randommodule.c` does. With the same seed,
//! [`PythonRandom::shuffle`] leaves a list in the order `random.shuffle` leaves it, which is
//! how SWE-agent and mini-swe-agent pick instances with `--shuffle`.

/// Words of MT19937 state.
const N: usize = 624;
/// The twist's middle offset.
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER_MASK: u32 = 0x8000_0000;
const LOWER_MASK: u32 = 0x7fff_ffff;

/// A generator that gives the same numbers as Python's `random.Random(seed)`.
#[derive(Clone)]
pub struct PythonRandom {
    state: [u32; N],
    index: usize,
}

impl std::fmt::Debug for PythonRandom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PythonRandom")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

impl PythonRandom {
    /// `random.Random(seed)`: the seed's 32-bit words, least significant first (one word for
    /// 0), go to `init_by_array`.
    pub fn new(seed: u64) -> Self {
        let low = u32::try_from(seed & u64::from(u32::MAX)).unwrap_or(u32::MAX);
        let high = u32::try_from(seed >> 32).unwrap_or(u32::MAX);
        let key: &[u32] = if high == 0 { &[low] } else { &[low, high] };
        let mut generator = Self {
            state: [0; N],
            index: N,
        };
        generator.init_by_array(key);
        generator
    }

    /// mt19937ar's `init_genrand`.
    fn init_genrand(&mut self, seed: u32) {
        self.state[0] = seed;
        for i in 1..N {
            let previous = self.state[i - 1];
            self.state[i] = 1_812_433_253u32
                .wrapping_mul(previous ^ (previous >> 30))
                .wrapping_add(u32::try_from(i).unwrap_or(u32::MAX));
        }
        self.index = N;
    }

    /// mt19937ar's `init_by_array`.
    fn init_by_array(&mut self, key: &[u32]) {
        self.init_genrand(19_650_218);
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..N.max(key.len()) {
            let previous = self.state[i - 1];
            self.state[i] = (self.state[i] ^ (previous ^ (previous >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(u32::try_from(j).unwrap_or(u32::MAX));
            i += 1;
            j += 1;
            if i >= N {
                self.state[0] = self.state[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            let previous = self.state[i - 1];
            self.state[i] = (self.state[i]
                ^ (previous ^ (previous >> 30)).wrapping_mul(1_566_083_941))
            .wrapping_sub(u32::try_from(i).unwrap_or(u32::MAX));
            i += 1;
            if i >= N {
                self.state[0] = self.state[N - 1];
                i = 1;
            }
        }
        self.state[0] = 0x8000_0000;
    }

    /// The next 32 random bits (mt19937ar's `genrand_int32`).
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            self.twist();
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    fn twist(&mut self) {
        let mag = |y: u32| if y & 1 == 0 { 0 } else { MATRIX_A };
        for k in 0..N {
            let y = (self.state[k] & UPPER_MASK) | (self.state[(k + 1) % N] & LOWER_MASK);
            self.state[k] = self.state[(k + M) % N] ^ (y >> 1) ^ mag(y);
        }
        self.index = 0;
    }

    /// `getrandbits(k)` for `k` up to 64: one 32-bit draw shifted right for `k <= 32`;
    /// otherwise 32-bit words, least significant first, the last one shifted.
    pub fn getrandbits(&mut self, k: u32) -> u64 {
        if k == 0 {
            return 0;
        }
        if k <= 32 {
            return u64::from(self.next_u32() >> (32 - k));
        }
        let low = u64::from(self.next_u32());
        let high = u64::from(self.next_u32() >> (64 - k.min(64)));
        low | (high << 32)
    }

    /// `_randbelow(n)` (`_randbelow_with_getrandbits`): draws `n.bit_length()` bits until the
    /// value is below `n`. `n` must be positive.
    pub fn randbelow(&mut self, n: u64) -> u64 {
        let bits = u64::BITS - n.leading_zeros();
        let mut value = self.getrandbits(bits);
        while value >= n {
            value = self.getrandbits(bits);
        }
        value
    }

    /// `shuffle(x)`: for `i` from the last index down to 1, swap item `i` with item
    /// `_randbelow(i + 1)`.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let bound = u64::try_from(i + 1).unwrap_or(u64::MAX);
            let j = usize::try_from(self.randbelow(bound)).unwrap_or(0);
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values from CPython 3.11 (the same in every 3.x):
    //   python3 -c 'import random; r = random.Random(42); print([r.getrandbits(32) for _ in range(3)])'
    // and likewise for the other seeds and calls below.

    #[test]
    fn draws_match_cpython_for_one_and_two_word_seeds() {
        let draws = |seed: u64, n: usize| {
            let mut generator = PythonRandom::new(seed);
            (0..n).map(|_| generator.next_u32()).collect::<Vec<_>>()
        };
        assert_eq!(draws(42, 3), [2_746_317_213, 478_163_327, 107_420_369]);
        assert_eq!(draws(0, 2), [3_626_764_237, 1_654_615_998]);
        assert_eq!(draws((1 << 40) + 5, 2), [2_166_296_868, 2_220_160_828]);
        assert_eq!(draws(u64::MAX, 2), [93_740_670, 1_068_495_656]);
    }

    #[test]
    fn getrandbits_over_32_bits_puts_the_first_word_lowest() {
        let mut generator = PythonRandom::new(42);
        assert_eq!(generator.getrandbits(64), 2_053_695_854_357_871_005);
        assert_eq!(generator.getrandbits(1), 0);
        assert_eq!(generator.getrandbits(33), 3_184_935_163);
    }

    #[test]
    fn shuffle_matches_cpython() {
        // python3 -c 'import random; r = random.Random(42); x = list(range(10)); r.shuffle(x); print(x)'
        let mut items: Vec<u32> = (0..10).collect();
        PythonRandom::new(42).shuffle(&mut items);
        assert_eq!(items, [7, 3, 2, 8, 5, 6, 9, 4, 0, 1]);
    }

    #[test]
    fn the_state_is_regenerated_after_624_draws() {
        // python3 -c 'import random; r = random.Random(42); [r.getrandbits(32) for _ in range(624)]; print(r.getrandbits(32))'
        let mut generator = PythonRandom::new(42);
        for _ in 0..624 {
            generator.next_u32();
        }
        assert_eq!(generator.next_u32(), 1_071_722_055);
    }
}
