//! Message digests as lower-case hex, for the hash functions of Kyverno's libraries
//! (kyverno/sdk `extensions/cel/libs/hash`: Go's crypto/sha1, crypto/sha256 and
//! crypto/md5 over a string's bytes, hex-encoded). SHA-1 and SHA-256 come from `ring`;
//! `ring` has no MD5, so it is written here after RFC 1321.

/// The digest algorithms Kyverno's hash functions offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    Md5,
    Sha1,
    Sha256,
}

/// `bytes`' digest as lower-case hex (Go's `hex.EncodeToString`).
pub fn hex_digest(algorithm: Algorithm, bytes: &[u8]) -> String {
    let sum = match algorithm {
        Algorithm::Md5 => md5(bytes).to_vec(),
        Algorithm::Sha1 => ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, bytes)
            .as_ref()
            .to_vec(),
        Algorithm::Sha256 => ring::digest::digest(&ring::digest::SHA256, bytes)
            .as_ref()
            .to_vec(),
    };
    sum.iter().map(|b| format!("{b:02x}")).collect()
}

/// Per-round shift amounts (RFC 1321 section 3.4).
const SHIFTS: [u32; 64] = [
    7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9,
    14, 20, 5, 9, 14, 20, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10, 15,
    21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
];

/// MD5 of `input` (RFC 1321): 64-byte blocks of little-endian words, padded with a 1 bit,
/// zeros and the bit length.
fn md5(input: &[u8]) -> [u8; 16] {
    // T[i] = floor(abs(sin(i + 1)) * 2^32), as the RFC defines the table.
    let table: Vec<u32> = (0..64)
        .map(|i| ((i as f64 + 1.0).sin().abs() * 4_294_967_296.0) as u32)
        .collect();
    let mut state: [u32; 4] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];
    let mut message = input.to_vec();
    message.push(0x80);
    while message.len() % 64 != 56 {
        message.push(0);
    }
    message.extend_from_slice(&((input.len() as u64).wrapping_mul(8)).to_le_bytes());
    for block in message.chunks_exact(64) {
        let words: Vec<u32> = block
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect();
        let [mut a, mut b, mut c, mut d] = state;
        for i in 0..64 {
            let (f, g) = match i / 16 {
                0 => ((b & c) | (!b & d), i),
                1 => ((d & b) | (!d & c), (5 * i + 1) % 16),
                2 => (b ^ c ^ d, (3 * i + 5) % 16),
                _ => (c ^ (b | !d), (7 * i) % 16),
            };
            let rotated = a
                .wrapping_add(f)
                .wrapping_add(table[i])
                .wrapping_add(words[g])
                .rotate_left(SHIFTS[i]);
            (a, d, c) = (d, c, b);
            b = b.wrapping_add(rotated);
        }
        for (s, v) in state.iter_mut().zip([a, b, c, d]) {
            *s = s.wrapping_add(v);
        }
    }
    let mut out = [0u8; 16];
    for (chunk, s) in out.chunks_exact_mut(4).zip(state) {
        chunk.copy_from_slice(&s.to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 1321's test suite (appendix A.5) and the SHA test vectors of FIPS 180.
    #[test]
    fn digests_match_the_published_vectors() {
        for (input, want) in [
            ("", "d41d8cd98f00b204e9800998ecf8427e"),
            ("a", "0cc175b9c0f1b6a831c399e269772661"),
            ("abc", "900150983cd24fb0d6963f7d28e17f72"),
            ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            (
                "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
                "57edf4a22be3c955ac49da2e2107b67a",
            ),
        ] {
            assert_eq!(
                hex_digest(Algorithm::Md5, input.as_bytes()),
                want,
                "{input:?}"
            );
        }
        assert_eq!(
            hex_digest(Algorithm::Sha1, b"abc"),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        assert_eq!(
            hex_digest(Algorithm::Sha256, b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
