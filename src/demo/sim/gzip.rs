//! A gzip member of stored (uncompressed) deflate blocks, written by flate2 at
//! [`Compression::none`]: a valid `.gz` every gzip reader takes (the simulator's files are
//! small and local; size does not matter, the format does).

use std::io::Write as _;

use flate2::write::GzEncoder;
use flate2::Compression;

/// The largest stored deflate block (5 bytes of header each).
const BLOCK: usize = 65_535;

/// `data` as a gzip file (RFC 1952) whose deflate stream (RFC 1951) is stored blocks.
pub fn gzip_stored(data: &[u8]) -> Vec<u8> {
    let mut z = GzEncoder::new(Vec::with_capacity(data.len() + data.len() / BLOCK * 5 + 32), Compression::none());
    // Writing to a Vec cannot fail.
    z.write_all(data).expect("gzip into memory");
    z.finish().expect("gzip into memory")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads back a stored-block gzip member (what `gzip -d` does for these files).
    fn gunzip_stored(gz: &[u8]) -> Vec<u8> {
        assert_eq!(&gz[..4], &[0x1f, 0x8b, 8, 0]);
        let mut at = 10;
        let mut out = Vec::new();
        loop {
            let last = gz[at] & 1 == 1;
            assert_eq!(gz[at] & 6, 0, "stored block");
            let len = u16::from_le_bytes([gz[at + 1], gz[at + 2]]);
            let nlen = u16::from_le_bytes([gz[at + 3], gz[at + 4]]);
            assert_eq!(len, !nlen);
            out.extend_from_slice(&gz[at + 5..at + 5 + usize::from(len)]);
            at += 5 + usize::from(len);
            if last {
                break;
            }
        }
        let crc = u32::from_le_bytes(gz[at..at + 4].try_into().unwrap());
        let size = u32::from_le_bytes(gz[at + 4..at + 8].try_into().unwrap());
        assert_eq!((crc, size as usize, at + 8), (crc32fast::hash(&out), out.len(), gz.len()));
        out
    }

    #[test]
    fn stored_blocks_round_trip_at_every_size() {
        for n in [0, 1, 100, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 7] {
            let data: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
            assert_eq!(gunzip_stored(&gzip_stored(&data)), data, "{n} bytes");
        }
    }

    /// What the feed reads the cache file with (flate2's decoder) takes it back whole.
    #[test]
    fn the_feeds_decoder_reads_it() {
        let text = "raw_text,station_id\nKNYC 011251Z 00000KT 10SM CLR 02/M03 A3012,KNYC\n".repeat(5_000);
        let gz = gzip_stored(text.as_bytes());
        assert_eq!(crate::feeds::awc_cache::gunzip(&gz).as_deref(), Ok(text.as_str()));
    }
}
