//! The parser fed real responses cut at every boundary: framing, interim responses,
//! bodiless responses, connection close, and malformed input.

use super::*;

/// Feeds `input` cut into the given pieces; returns the responses seen and where.
fn run(parser: &mut ResponseParser, pieces: &[&[u8]]) -> Result<Vec<Response>, Malformed> {
    let mut out = Vec::new();
    for piece in pieces {
        let mut rest = *piece;
        loop {
            match parser.feed(rest)? {
                Progress::NeedMore => break,
                Progress::Complete(r) => {
                    out.push(r);
                    rest = &rest[r.consumed..];
                    if rest.is_empty() {
                        break;
                    }
                }
            }
        }
    }
    Ok(out)
}

const CHUNKED: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nX: y\r\n\r\n\
    5;ext=1\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nTrailer: t\r\n\r\n";

#[test]
fn chunked_split_at_every_boundary() {
    // One split point anywhere.
    for cut in 0..=CHUNKED.len() {
        let mut p = ResponseParser::new(false);
        let got = run(&mut p, &[&CHUNKED[..cut], &CHUNKED[cut..]]).unwrap();
        assert_eq!(got.len(), 1, "cut at {cut}");
        assert_eq!(got[0].status, 200);
        assert!(!got[0].close);
    }
    // Every byte on its own.
    let mut p = ResponseParser::new(false);
    let pieces: Vec<&[u8]> = CHUNKED.chunks(1).collect();
    let got = run(&mut p, &pieces).unwrap();
    assert_eq!(got.len(), 1);
    // The last byte completes it, consuming exactly that byte.
    assert_eq!(got[0].consumed, 1);
}

#[test]
fn content_length_split_and_back_to_back() {
    let one = b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nabc";
    let two: Vec<u8> = [&one[..], b"HTTP/1.1 500 Oops\r\ncontent-length: 0\r\n\r\n"].concat();
    for cut in 0..=two.len() {
        let mut p = ResponseParser::new(false);
        let got = run(&mut p, &[&two[..cut], &two[cut..]]).unwrap();
        let codes: Vec<u16> = got.iter().map(|r| r.status).collect();
        assert_eq!(codes, [404, 500], "cut at {cut}");
    }
}

#[test]
fn interim_responses_are_skipped() {
    let input = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\n\
        HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
    let mut p = ResponseParser::new(false);
    let got = run(&mut p, &[input]).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].status, 201);
    assert_eq!(got[0].consumed, input.len());
}

#[test]
fn a_100_continue_is_told_apart_from_other_interim_responses() {
    let mut p = ResponseParser::new(false);
    let hints = p.feed(b"HTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\n");
    assert_eq!(hints, Ok(Progress::NeedMore));
    assert!(!p.continued(), "103 is not a go-ahead for the body");
    assert_eq!(p.feed(b"HTTP/1.1 100 Cont"), Ok(Progress::NeedMore));
    assert!(!p.continued());
    assert_eq!(p.feed(b"inue\r\n\r\n"), Ok(Progress::NeedMore));
    assert!(p.continued());
    let done = p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    assert!(matches!(done, Ok(Progress::Complete(r)) if r.status == 200));
    assert!(!p.continued(), "reset for the next response");
}

#[test]
fn bodiless_responses() {
    // HEAD: Content-Length describes the body GET would have had.
    let mut p = ResponseParser::new(true);
    let got = run(&mut p, &[b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n"]).unwrap();
    assert_eq!(got[0].status, 200);
    for status in ["204 No Content", "304 Not Modified"] {
        let mut p = ResponseParser::new(false);
        let input = format!("HTTP/1.1 {status}\r\nContent-Length: 7\r\n\r\n");
        let got = run(&mut p, &[input.as_bytes()]).unwrap();
        assert_eq!(got.len(), 1, "{status}");
    }
}

#[test]
fn connection_close_and_http10() {
    let cases: &[(&[u8], bool)] = &[
        (
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            true,
        ),
        (
            b"HTTP/1.1 200 OK\r\nConnection: Keep-Alive, Close\r\nContent-Length: 0\r\n\r\n",
            true,
        ),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", true),
        (
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
            false,
        ),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false),
    ];
    for (input, close) in cases {
        let mut p = ResponseParser::new(false);
        let got = run(&mut p, &[input]).unwrap();
        assert_eq!(got[0].close, *close, "{}", String::from_utf8_lossy(input));
    }
}

/// Content-Length beside Transfer-Encoding: the chunked framing wins, and the connection is
/// not reused (RFC 9112 6.3: the message may be an attempt at request smuggling or response
/// splitting; issue 46 item 8 saw a late second response counted as 95 phantom 299s).
#[test]
fn content_length_beside_transfer_encoding_closes_the_connection() {
    let input: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\
        Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
    let mut p = ResponseParser::new(false);
    let got = run(&mut p, &[input]).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].consumed, input.len());
    // Not reused, though the server announced no close.
    assert!(got[0].ambiguous_framing && !got[0].close);
    // Either alone keeps the connection.
    for alone in [
        &b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"[..],
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    ] {
        let mut p = ResponseParser::new(false);
        let got = run(&mut p, &[alone]).unwrap();
        assert!(
            !got[0].close && !got[0].ambiguous_framing,
            "{}",
            String::from_utf8_lossy(alone)
        );
    }
}

#[test]
fn body_until_close() {
    let mut p = ResponseParser::new(false);
    let got = run(&mut p, &[b"HTTP/1.1 200 OK\r\n\r\nsome body", b" more"]).unwrap();
    assert!(got.is_empty());
    let r = p.eof().expect("complete at EOF");
    assert_eq!((r.status, r.close), (200, true));
}

#[test]
fn cut_off_responses_are_not_complete() {
    let mut p = ResponseParser::new(false);
    run(
        &mut p,
        &[b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"],
    )
    .unwrap();
    assert!(p.started());
    assert_eq!(p.eof(), None);
    let mut p = ResponseParser::new(false);
    assert!(!p.started());
    assert_eq!(p.eof(), None);
}

#[test]
fn garbage_is_malformed() {
    let bad: &[&[u8]] = &[
        b"garbage garbage\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n",
    ];
    for input in bad {
        let mut p = ResponseParser::new(false);
        assert!(
            run(&mut p, &[input]).is_err(),
            "{}",
            String::from_utf8_lossy(input)
        );
    }
    let mut p = ResponseParser::new(false);
    let huge = vec![b'a'; MAX_HEAD_BYTES + 10];
    let mut input = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
    input.extend_from_slice(&huge);
    assert_eq!(
        run(&mut p, &[&input[..100], &input[100..]]),
        Err(Malformed("header block larger than 64 KiB"))
    );
}

/// A chunk-size line by RFC 9112 7.1.1: whitespace only inside an extension (around `;` and
/// `=`), never at the line's end; a `;` needs a name, an `=` a value (issue 45 item 8: each
/// invalid line here was read as valid).
#[test]
fn chunk_size_lines_follow_the_grammar() {
    let valid: &[&str] = &[
        "5",
        "05",
        "5;a",
        "5;a=b",
        "5;a=b;c",
        "5 ;a",
        "5\t; a = b",
        "5 ; a = \"quoted; with \\\"escapes\\\"\" ; c",
        "5;a=\"\"",
        "5;!#$%&'*+-.^_`|~09AZaz=x",
    ];
    let invalid: &[(&str, &str)] = &[
        ("5 ", "whitespace at the end of a chunk-size line"),
        ("5\t", "whitespace at the end of a chunk-size line"),
        ("5;a ", "whitespace at the end of a chunk-size line"),
        ("5;a=b ", "whitespace at the end of a chunk-size line"),
        ("5;a=\"b\" ", "whitespace at the end of a chunk-size line"),
        ("5;", "chunk extension without a name"),
        ("5; ", "chunk extension without a name"),
        ("5;;a", "chunk extension without a name"),
        ("5;=b", "chunk extension without a name"),
        ("5;a=", "chunk extension without a value"),
        ("5;a = ", "chunk extension without a value"),
        ("5 a", "invalid chunk size"),
        ("5 5", "invalid chunk size"),
        (" 5", "invalid chunk size"),
        ("5;a b", "invalid character in a chunk extension"),
        ("5;a=b c", "invalid character in a chunk extension"),
        ("5;a=\"b\"c", "invalid character in a chunk extension"),
        ("5;a=\"b", "invalid character in a chunk extension"),
        ("5;a=b=c", "invalid character in a chunk extension"),
        ("5;a@", "invalid character in a chunk extension"),
        ("5;a=\"\x01\"", "invalid character in a chunk extension"),
    ];
    let response = |line: &str| {
        format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{line}\r\nhello\r\n0\r\n\r\n")
    };
    for line in valid {
        let input = response(line);
        let mut p = ResponseParser::new(false);
        let got = run(&mut p, &[input.as_bytes()]);
        assert!(matches!(&got, Ok(r) if r.len() == 1), "{line:?}: {got:?}");
        // Also byte by byte: the grammar is checked across reads.
        let mut p = ResponseParser::new(false);
        let pieces: Vec<&[u8]> = input.as_bytes().chunks(1).collect();
        assert_eq!(run(&mut p, &pieces).map(|r| r.len()), Ok(1), "{line:?}");
    }
    for (line, why) in invalid {
        let input = response(line);
        let mut p = ResponseParser::new(false);
        assert_eq!(
            run(&mut p, &[input.as_bytes()]),
            Err(Malformed(why)),
            "{line:?}"
        );
        // The last chunk's line is held to the same grammar.
        let last = format!(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{}\r\n\r\n",
            line.replacen('5', "0", 1)
        );
        let mut p = ResponseParser::new(false);
        assert_eq!(
            run(&mut p, &[last.as_bytes()]),
            Err(Malformed(why)),
            "{last:?}"
        );
    }
    // Leading zeros are not counted into an overflow (a u8 count once wrapped at 256).
    let zeros = format!("{}5", "0".repeat(300));
    let mut p = ResponseParser::new(false);
    assert_eq!(
        run(&mut p, &[response(&zeros).as_bytes()]).map(|r| r.len()),
        Ok(1)
    );
}

/// A watched response's `Alt-Svc` fields are read (joined, past an interim 103, whatever
/// the cut); an unwatched one's are not, nor the next response's.
#[test]
fn alt_svc_is_read_only_when_watched() {
    let input: &[u8] = b"HTTP/1.1 103 Early Hints\r\nAlt-Svc: h2=\":1\"\r\n\r\n\
        HTTP/1.1 200 OK\r\nContent-Length: 2\r\nalt-svc: h3=\":443\"; ma=60\r\n\
        ALT-SVC: h3-29=\":443\"\r\n\r\nok\
        HTTP/1.1 200 OK\r\nContent-Length: 0\r\nAlt-Svc: h3=\":9\"\r\n\r\n";
    for cut in 0..=input.len() {
        let mut p = ResponseParser::new(false);
        p.watch_alt_svc();
        let got = run(&mut p, &[&input[..cut], &input[cut..]]).unwrap();
        assert_eq!(got.len(), 2, "cut at {cut}");
        assert_eq!(
            p.take_alt_svc().as_deref(),
            Some("h3=\":443\"; ma=60, h3-29=\":443\""),
            "cut at {cut}"
        );
        assert_eq!(p.take_alt_svc(), None);
    }
    let mut p = ResponseParser::new(false);
    run(&mut p, &[input]).unwrap();
    assert_eq!(p.take_alt_svc(), None, "not watched");
}

/// Responses a server might send one after another on a connection: the same block again
/// (read from the memo), and blocks that differ from it in one field's value, in framing,
/// in the close, in the status, or only in a byte of a field loadlab does not read.
const SEQUENCE: &[&[u8]] = &[
    b"HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Sun, 29 Nov 2026 01:00:00 GMT\r\nContent-Length: 13\r\n\r\nHello, World!",
    b"HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Sun, 29 Nov 2026 01:00:00 GMT\r\nContent-Length: 13\r\n\r\nHello, World!",
    b"HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Sun, 29 Nov 2026 01:00:01 GMT\r\nContent-Length: 13\r\n\r\nHello, World!",
    b"HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Sun, 29 Nov 2026 01:00:01 GMT\r\nContent-Length: 3\r\n\r\nabc",
    b"HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Sun, 29 Nov 2026 01:00:01 GMT\r\nContent-Length: 3\r\n\r\nxyz",
    b"HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Sun, 29 Nov 2026 01:00:01 GMT\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Sun, 29 Nov 2026 01:00:01 GMT\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nz\r\n0\r\n\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
    b"HTTP/1.1 503 Busy\r\nServer: nginx\r\nDate: Sun, 29 Nov 2026 01:00:01 GMT\r\nContent-Length: 13\r\n\r\nHello, World!",
    b"HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Sun, 29 Nov 2026 01:00:01 GMT\r\nContent-Length: 13\r\nConnection: close\r\n\r\nHello, World!",
];

/// A parser that has read earlier responses says of each what a fresh one says, whether its
/// block is read from the memo or parsed, wherever the reads cut it.
#[test]
fn a_repeated_header_block_is_read_as_parsing_reads_it() {
    let fresh = |pieces: &[&[u8]]| run(&mut ResponseParser::new(false), pieces).unwrap();
    let mut p = ResponseParser::new(false);
    for (i, response) in SEQUENCE.iter().enumerate() {
        let got = run(&mut p, &[response]).unwrap();
        assert_eq!(got, fresh(&[response]), "response {i}");
        // Again, cut at every byte: a cut block is parsed, a whole one may repeat.
        for cut in 0..=response.len() {
            let pieces = [&response[..cut], &response[cut..]];
            let got = run(&mut p, &pieces).unwrap();
            assert_eq!(got, fresh(&pieces), "response {i} cut at {cut}");
        }
    }
    assert!(p.last_head.hits > 0, "the memo was never used");
    // A HEAD request's answer repeats a GET's block: no body, whatever it says.
    let mut p = ResponseParser::new(false);
    run(&mut p, &[SEQUENCE[0]]).unwrap();
    p.set_request_is_head(true);
    let head = &SEQUENCE[0][..SEQUENCE[0].len() - 13];
    let got = run(&mut p, &[head]).unwrap();
    assert_eq!((got.len(), got[0].consumed), (1, head.len()));
    assert_eq!(p.last_head.hits, 1);
    // Malformed after a good block that it starts like: still malformed.
    let mut p = ResponseParser::new(false);
    run(&mut p, &[SEQUENCE[0]]).unwrap();
    let bad = b"HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Sun, 29 Nov 2026 01:00:00 GMT\r\nContent-Length: 1x\r\n\r\n";
    assert!(run(&mut p, &[bad]).is_err());
}

#[test]
fn a_repeated_block_is_used_once_known_and_long_ones_are_not_kept() {
    let mut p = ResponseParser::new(false);
    run(&mut p, &[SEQUENCE[0], SEQUENCE[1], SEQUENCE[1]]).unwrap();
    assert_eq!(p.last_head.hits, 2);
    let long = format!(
        "HTTP/1.1 200 OK\r\nX-Pad: {}\r\nContent-Length: 0\r\n\r\n",
        "a".repeat(1024)
    );
    let mut p = ResponseParser::new(false);
    let got = run(&mut p, &[long.as_bytes(), long.as_bytes()]).unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(
        p.last_head.hits, 0,
        "a block over 1 KiB is parsed each time"
    );
}

/// The memo keeps no Alt-Svc: a block read while the watch is on is parsed, even a repeat.
#[test]
fn a_watched_block_is_parsed_even_when_it_repeats() {
    let input: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nAlt-Svc: h3=\":9\"\r\n\r\n";
    let mut p = ResponseParser::new(false);
    run(&mut p, &[input]).unwrap();
    assert_eq!(p.take_alt_svc(), None, "not watched");
    p.watch_alt_svc();
    run(&mut p, &[input]).unwrap();
    assert_eq!(p.take_alt_svc().as_deref(), Some("h3=\":9\""));
    assert_eq!(p.last_head.hits, 0);
    run(&mut p, &[input]).unwrap();
    assert_eq!(p.last_head.hits, 1, "a repeat once the watch is over");
}
