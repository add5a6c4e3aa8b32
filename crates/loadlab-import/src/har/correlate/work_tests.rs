use super::*;

/// Issue 46 item 6: each request was searched for every value known so far, and each new
/// value in all the text sent so far, so a recording whose every response gives an id
/// the next request sends back (100,000 entries) took minutes. Now a request is searched
/// only for the values it holds: a few searches per entry.
#[test]
fn a_chain_of_ids_costs_a_few_searches_per_entry() {
    let n = 2_000;
    let entries: Vec<Entry> = (0..n)
        .map(|i| Entry {
            number: i + 1,
            pageref: None,
            started_ms: i as f64,
            time_ms: 1.0,
            method: "GET".into(),
            url: if i == 0 {
                "http://h/items".into()
            } else {
                format!("http://h/items?order=ord-{:09}", i - 1)
            },
            headers: Vec::new(),
            cookies: Vec::new(),
            post_mime: String::new(),
            post_text: None,
            status: 200,
            response_headers: vec![("X-Request-Id".into(), format!("req-{i:012}"))],
            set_cookies: Vec::new(),
            mime: "application/json".into(),
            response_text: Some(format!("{{\"order\":{{\"id\":\"ord-{i:09}\"}}}}")),
            resource_type: None,
        })
        .collect();
    let refs: Vec<&Entry> = entries.iter().collect();
    let mut requests: Vec<Request> = entries
        .iter()
        .map(|e| Request {
            method: e.method.clone(),
            url: e.url.clone(),
            ..Request::default()
        })
        .collect();
    let mut names = UniqueNames::variables();
    let done = correlate(&refs, &mut requests, &vec![true; n], &mut names).unwrap();
    // Every order id captured where it was given and sent back by the next request.
    assert_eq!(done.captures.iter().flatten().count(), n - 1);
    assert_eq!(done.captures[0][0].var, "ORDER_ID");
    assert_eq!(done.captures[1][0].var, "ORDER_ID_2");
    assert_eq!(
        requests[n - 1].url,
        format!("http://h/items?order={{{{ORDER_ID_{}}}}}", n - 1)
    );
    assert!(
        done.tried <= 2 * n as u64,
        "{} searches for {n} entries",
        done.tried
    );
}
