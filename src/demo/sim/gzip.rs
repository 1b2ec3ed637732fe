//! A gzip member of stored (uncompressed) deflate blocks: a valid `.gz` every gzip reader
//! takes, written without a compression library (the simulator's files are small and
//! local; size does not matter, the format does).

/// The largest stored deflate block.
const BLOCK: usize = 65_535;

/// `data` as a gzip file (RFC 1952) whose deflate stream (RFC 1951) is stored blocks.
pub fn gzip_stored(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + data.len() / BLOCK * 5 + 32);
    // ID1 ID2, CM = deflate, no flags, no mtime, XFL 0, OS unknown.
    out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
    let mut chunks = data.chunks(BLOCK).peekable();
    if chunks.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    while let Some(chunk) = chunks.next() {
        // BFINAL on the last block, BTYPE 00 (stored); the rest of the byte is padding.
        out.push(u8::from(chunks.peek().is_none()));
        let len = chunk.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    out.extend_from_slice(&crc32fast::hash(data).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out
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
}
