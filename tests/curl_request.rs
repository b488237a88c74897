//! The request side of curl's vocabulary: each option's request, output and
//! exit status compared with real curl's against a local server on 127.0.0.1.

#[path = "support/http_server.rs"]
mod http_server;

#[path = "support/curl.rs"]
mod curl;

use curl::Case;

#[test]
fn plain_get_matches_curl() {
    curl::require_curl();
    Case::new(&["{url}/a/b?x=1&y=2"]).run().assert_same();
}

#[test]
fn header_and_data_match_curl() {
    Case::new(&["-H", "X-One: 1", "-d", "a=b", "{url}/post"])
        .run()
        .assert_same();
}
