//! A minimal reader for `ar` archives (rlibs), enough to pull out the LLVM
//! bitcode members that rustc puts in an rlib for the nvptx64 target.

/// LLVM bitcode magic (`BC\xC0\xDE`).
const BITCODE_MAGIC: [u8; 4] = [0x42, 0x43, 0xC0, 0xDE];
/// LLVM bitcode wrapper magic (`0x0B17C0DE`, little endian).
const BITCODE_WRAPPER_MAGIC: [u8; 4] = [0xDE, 0xC0, 0x17, 0x0B];

/// Whether `data` starts like an LLVM bitcode file.
pub fn is_bitcode(data: &[u8]) -> bool {
    data.starts_with(&BITCODE_MAGIC) || data.starts_with(&BITCODE_WRAPPER_MAGIC)
}

/// Whether `data` is an `ar` archive.
pub fn is_archive(data: &[u8]) -> bool {
    data.starts_with(b"!<arch>\n")
}

/// The members of an `ar` archive as `(name, contents)`, in order. Handles the
/// GNU (`/N` long names, `/` and `//` special members) and BSD (`#1/N`)
/// variants; special members are skipped.
pub fn members(data: &[u8]) -> Result<Vec<(String, &[u8])>, String> {
    if !is_archive(data) {
        return Err("not an ar archive".into());
    }
    let mut out = Vec::new();
    let mut long_names: &[u8] = &[];
    let mut pos = 8;
    while pos < data.len() {
        if data.len() - pos < 60 {
            return Err(format!("truncated member header at byte {pos}"));
        }
        let header = &data[pos..pos + 60];
        if &header[58..60] != b"`\n" {
            return Err(format!("bad member header at byte {pos}"));
        }
        let field = |a: usize, b: usize| String::from_utf8_lossy(&header[a..b]).trim_end().to_string();
        let raw_name = field(0, 16);
        let size: usize = field(48, 58)
            .parse()
            .map_err(|_| format!("bad member size at byte {pos}"))?;
        let start = pos + 60;
        let end = start
            .checked_add(size)
            .filter(|&e| e <= data.len())
            .ok_or_else(|| format!("member at byte {pos} runs past the end"))?;
        let mut body = &data[start..end];
        let name = if raw_name == "/" || raw_name == "/SYM64/" || raw_name == "__.SYMDEF" {
            None
        } else if raw_name == "//" {
            long_names = body;
            None
        } else if let Some(n) = raw_name.strip_prefix("#1/") {
            // BSD: the name is the first `n` bytes of the body.
            let n: usize = n.parse().map_err(|_| format!("bad BSD name at byte {pos}"))?;
            if n > body.len() {
                return Err(format!("bad BSD name length at byte {pos}"));
            }
            let name = String::from_utf8_lossy(&body[..n])
                .trim_end_matches('\0')
                .to_string();
            body = &body[n..];
            if name.starts_with("__.SYMDEF") {
                None
            } else {
                Some(name)
            }
        } else if let Some(off) = raw_name.strip_prefix('/') {
            // GNU: offset into the long-name table, entry ends with "/\n".
            let off: usize = off.parse().map_err(|_| format!("bad long name at byte {pos}"))?;
            let rest = long_names
                .get(off..)
                .ok_or_else(|| format!("bad long name offset at byte {pos}"))?;
            let len = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
            Some(
                String::from_utf8_lossy(&rest[..len])
                    .trim_end_matches('/')
                    .to_string(),
            )
        } else {
            Some(raw_name.trim_end_matches('/').to_string())
        };
        if let Some(name) = name {
            out.push((name, body));
        }
        // Members are 2-byte aligned.
        pos = end + (end & 1);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(name: &str, size: usize) -> Vec<u8> {
        let mut h = format!("{name:<16}{:<12}{:<6}{:<6}{:<8}{size:<10}", 0, 0, 0, 644).into_bytes();
        h.extend_from_slice(b"`\n");
        assert_eq!(h.len(), 60);
        h
    }

    #[test]
    fn reads_gnu_archive_with_long_names() {
        let long = b"a-very-long-member-name.rcgu.o/\n";
        let mut a = b"!<arch>\n".to_vec();
        a.extend(header("/", 4));
        a.extend_from_slice(&[0, 0, 0, 0]);
        a.extend(header("//", long.len()));
        a.extend_from_slice(long);
        a.extend(header("/0", 5));
        a.extend_from_slice(b"BC\xC0\xDEx");
        a.push(b'\n'); // padding to even
        a.extend(header("lib.rmeta/", 2));
        a.extend_from_slice(b"rm");
        let m = members(&a).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].0, "a-very-long-member-name.rcgu.o");
        assert!(is_bitcode(m[0].1));
        assert_eq!(m[1].0, "lib.rmeta");
        assert!(!is_bitcode(m[1].1));
    }

    #[test]
    fn reads_bsd_names_and_rejects_garbage() {
        let mut a = b"!<arch>\n".to_vec();
        a.extend(header("#1/8", 8 + 4));
        a.extend_from_slice(b"x.o\0\0\0\0\0");
        a.extend_from_slice(&BITCODE_WRAPPER_MAGIC);
        let m = members(&a).unwrap();
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].0, "x.o");
        assert!(is_bitcode(m[0].1));
        assert!(members(b"not an archive").is_err());
        let mut t = b"!<arch>\n".to_vec();
        t.extend(header("x.o/", 100));
        assert!(members(&t).is_err());
    }
}
