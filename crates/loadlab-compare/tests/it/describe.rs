//! The plain-words descriptions the CLI prints, for each kind of verdict.

use loadlab_compare::{compare, compare_many, Better, Options};

#[test]
fn significant_change_with_interval_and_p() {
    let control: &[f64] = &[10.0, 10.1, 9.9, 10.2, 9.8];
    let test: &[f64] = &[8.8, 8.9, 8.7, 9.0, 8.6];
    let c = compare(control, test, Better::Lower, &Options::default()).unwrap();
    // Ratio 0.88; the 3rd and 23rd of the 25 sorted ratios test/control are 0.853 and 0.908
    // (checked with numpy), so the change is 9.2% to 14.7%.
    assert_eq!(
        c.describe("faster", "slower"),
        "faster by 12% [9.2%, 15%] (p=0.0079)"
    );
    let c = compare(control, test, Better::Higher, &Options::default()).unwrap();
    assert!(c.describe("higher", "lower").starts_with("lower by 12% ["));
}

#[test]
fn inconclusive_with_three_runs() {
    let c = compare(
        &[10.0, 10.1, 9.9],
        &[12.0, 12.1, 11.9],
        Better::Lower,
        &Options::default(),
    )
    .unwrap();
    assert_eq!(
        c.describe("faster", "slower"),
        "inconclusive: 3 runs per arm cannot reach 95% confidence (smallest possible p = 0.10); \
         run at least 4 per arm"
    );
}

#[test]
fn inconclusive_in_a_family_names_the_adjustment() {
    let a: &[f64] = &[10.0, 10.1, 9.9, 10.2];
    let b: &[f64] = &[12.0, 12.1, 11.9, 12.2];
    let results = compare_many(
        &[(a, b, Better::Lower), (a, b, Better::Lower)],
        &Options::default(),
    );
    assert_eq!(
        results[0].as_ref().unwrap().describe("faster", "slower"),
        "inconclusive: 4 runs per arm cannot reach 95% confidence (smallest possible p = 0.057 \
         after Holm adjustment over 2 metrics); run at least 5 per arm"
    );
}

#[test]
fn no_difference_shows_p_and_change() {
    let c = compare(
        &[10.0, 10.6, 9.5, 10.3, 9.8],
        &[10.1, 9.7, 10.5, 9.9, 10.2],
        Better::Lower,
        &Options::default(),
    )
    .unwrap();
    // scipy: U = 13 of 25, p = 1.0; the interval is too wide for ±3% equivalence.
    assert_eq!(
        c.describe("faster", "slower"),
        "~ no significant difference (p=1.00; change +1.0% [-5.8%, +7.1%])"
    );
}

#[test]
fn equivalent_names_the_margin() {
    let c = compare(&[100.0; 6], &[100.0; 6], Better::Lower, &Options::default()).unwrap();
    assert_eq!(
        c.describe("faster", "slower"),
        "equivalent within ±3% (change +0.0% [+0.0%, +0.0%])"
    );
}
