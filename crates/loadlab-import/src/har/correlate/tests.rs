use super::*;

/// The search as it was before issue 46 (every known value tried on every request, every
/// new value looked for in all the text sent so far): the model the indexed search must
/// agree with.
fn plain(
    entries: &[&Entry],
    requests: &mut [Request],
    eligible: &[bool],
    taken: &mut Vec<String>,
) -> Vec<Vec<Capture>> {
    let unique_var = |name: &str, taken: &[String]| {
        (1..)
            .map(|i| {
                if i == 1 {
                    name.to_string()
                } else {
                    format!("{name}_{i}")
                }
            })
            .find(|n| !taken.contains(n))
            .unwrap()
    };
    let mut captures: Vec<Vec<Capture>> = vec![Vec::new(); requests.len()];
    let mut known: Vec<Candidate> = Vec::new();
    let mut assigned: Vec<(String, String)> = Vec::new();
    let mut sent_so_far = String::new();
    for i in 0..requests.len() {
        known.sort_by_key(|c| std::cmp::Reverse(c.value.len()));
        for cand in &known {
            let encoded = percent_encode(&cand.value);
            if !uses(&requests[i], &cand.value) && !uses(&requests[i], &encoded) {
                continue;
            }
            let var = match assigned.iter().find(|(v, _)| *v == cand.value) {
                Some((_, var)) => var.clone(),
                None => {
                    let var = unique_var(&cand.name, taken);
                    taken.push(var.clone());
                    assigned.push((cand.value.clone(), var.clone()));
                    captures[cand.step].push(Capture {
                        var: var.clone(),
                        source: cand.source.clone(),
                    });
                    var
                }
            };
            let with = format!("{{{{{var}}}}}");
            replace_in(&mut requests[i], &cand.value, &with);
            if encoded != cand.value {
                replace_in(&mut requests[i], &encoded, &with);
            }
        }
        for (_, text) in templated_fields(&requests[i]) {
            sent_so_far.push_str(text);
            sent_so_far.push('\n');
        }
        if eligible[i] {
            for c in candidates(entries[i], i) {
                let seen = known.iter().any(|k| k.value == c.value);
                if !seen && !sent_so_far.contains(&c.value) {
                    known.push(c);
                }
            }
        }
    }
    captures
}

/// xorshift64: the same recordings on every run.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Values that contain one another, encode differently, repeat and collide by name.
const VALUES: [&str; 10] = [
    "tok12345678",
    "tok1234567890",
    "12345678",
    "a/b=c+12345",
    "a%2Fb%3Dc%2B12345",
    "order-000001",
    "order-0000012",
    "zzzzzzzzzzzzzzzzzzzz",
    "user@example9",
    "x9y8z7w6",
];

fn entry(rng: &mut Rng, number: usize) -> Entry {
    let pick = |rng: &mut Rng| VALUES[rng.below(VALUES.len())].to_string();
    let sent = pick(rng);
    let encoded = percent_encode(&pick(rng));
    let header = pick(rng);
    let cookie = pick(rng);
    let body = pick(rng);
    let (id, token, cookie_set) = (pick(rng), pick(rng), pick(rng));
    Entry {
        number,
        pageref: None,
        started_ms: number as f64,
        time_ms: 1.0,
        method: "POST".into(),
        url: format!("http://h/p/{sent}?q={encoded}"),
        headers: vec![
            ("X-Ref".into(), header),
            ("Cookie".into(), format!("c={cookie}")),
        ],
        cookies: Vec::new(),
        post_mime: "application/json".into(),
        post_text: Some(format!("{{\"v\":\"{body}\"}}")),
        status: 200,
        response_headers: vec![("X-Token".into(), token)],
        set_cookies: vec![("sid".into(), cookie_set)],
        mime: "application/json".into(),
        response_text: Some(format!("{{\"order\":{{\"id\":\"{id}\"}}}}")),
        resource_type: None,
    }
}

fn request_of(e: &Entry) -> Request {
    Request {
        method: e.method.clone(),
        url: e.url.clone(),
        headers: e.headers.clone(),
        body: e.post_text.clone().map(Body::Raw),
    }
}

#[test]
fn the_indexed_search_agrees_with_the_plain_one() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut correlated = 0;
    for round in 0..300 {
        let n = 1 + rng.below(12);
        let entries: Vec<Entry> = (0..n).map(|i| entry(&mut rng, i + 1)).collect();
        let refs: Vec<&Entry> = entries.iter().collect();
        let eligible: Vec<bool> = (0..n).map(|_| rng.below(5) != 0).collect();
        let mut want_requests: Vec<Request> = entries.iter().map(request_of).collect();
        let mut taken = vec!["BASE_URL".to_string()];
        let want = plain(&refs, &mut want_requests, &eligible, &mut taken);

        let mut got_requests: Vec<Request> = entries.iter().map(request_of).collect();
        let mut names = UniqueNames::variables();
        names.take("BASE_URL");
        let got = correlate(&refs, &mut got_requests, &eligible, &mut names)
            .unwrap()
            .captures;
        assert_eq!(got, want, "round {round}: captures");
        assert_eq!(got_requests, want_requests, "round {round}: requests");
        correlated += got.iter().flatten().count();
    }
    // The recordings exercise correlation, not just its absence.
    assert!(correlated > 300, "{correlated} captures in 300 recordings");
}

/// A value a request sent before a response gave it is not correlated, even when the
/// request that sent it is far back.
#[test]
fn a_value_sent_before_it_was_given_is_left_alone() {
    let mut rng = Rng(7);
    let mut entries: Vec<Entry> = (0..3).map(|i| entry(&mut rng, i + 1)).collect();
    entries[0].url = "http://h/typed?name=user@example9".into();
    entries[1].response_headers = vec![("X-Echo".into(), "user@example9".into())];
    entries[2].url = "http://h/again?name=user@example9".into();
    let refs: Vec<&Entry> = entries.iter().collect();
    let mut requests: Vec<Request> = entries.iter().map(request_of).collect();
    let mut names = UniqueNames::variables();
    correlate(&refs, &mut requests, &[true; 3], &mut names).unwrap();
    assert_eq!(requests[2].url, "http://h/again?name=user@example9");
}
