//! The fleet: the clusters' server function, `GET /api/v1/fleet` with its filters, the fleet
//! page and its server functions, and the live-update stream.

use axum::{
    body::Body,
    http::{header, Request, StatusCode},
};

use http_body_util::BodyExt;

use super::support::*;

#[tokio::test]
async fn the_cluster_server_function_reads_the_emulated_fleet() {
    let (app, _) = test_app(false).await;
    fleet_json(&app, "").await;
    let request = Request::post("/api/list_clusters")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(header::ACCEPT, "application/json")
        .body(Body::empty())
        .expect("request");
    let response = send(&app, request).await;
    assert_eq!(response.status(), StatusCode::OK);
    let body = json(response).await;
    let names: Vec<&str> = body
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["batch-sim", "inference-prod", "ml-dev"]);
    let prod = &body[1];
    assert_eq!(prod["container_instances"], 12);
    assert_eq!(prod["services"], 7);
}

#[tokio::test]
async fn the_fleet_api_serves_the_snapshot_with_filters() {
    let (app, _) = test_app(false).await;
    let (status, all) = fleet_json(&app, "").await;
    assert_eq!(status, StatusCode::OK, "{all}");
    assert_eq!(all["stale"], false);
    assert!(all["age_seconds"].as_i64().is_some());
    let total = gpus(&all).len();
    assert!(total > 24, "{total}");

    let (_, dev) = fleet_json(&app, "?cluster=ml-dev").await;
    let clusters: Vec<&str> = dev["snapshot"]["clusters"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(clusters, ["ml-dev"]);

    let (_, dedicated) = fleet_json(&app, "?mode=DEDICATED").await;
    let found = gpus(&dedicated);
    assert!(!found.is_empty());
    assert!(found.iter().all(|g| g["mode"] == "DEDICATED"));

    let (_, research) = fleet_json(&app, "?team=research&instance_type=p4d.24xlarge").await;
    let found = gpus(&research);
    assert!(!found.is_empty());
    assert!(found.iter().all(|g| g["containers"]
        .as_array()
        .expect("list")
        .iter()
        .any(|c| c["team"] == "research")));
}

/// The fleet's answer is kept compressed: a client that takes gzip gets it framed as gzip, one
/// that does not gets the same JSON, and the snapshot is the same either way.
#[tokio::test]
async fn the_fleet_api_answers_gzip_and_plain_alike() {
    use std::io::Read;
    let (app, _) = test_app(false).await;
    let (_, plain) = fleet_json(&app, "?cluster=ml-dev").await;
    let ask = |accept: &'static str| {
        Request::get("/api/v1/fleet?cluster=ml-dev")
            .header(header::ACCEPT_ENCODING, accept)
            .body(Body::empty())
            .expect("request")
    };
    for accept in ["gzip", "br;q=1.0, gzip;q=0.8", "*"] {
        let response = send(&app, ask(accept)).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(
            response.headers()[header::CONTENT_ENCODING],
            "gzip",
            "{accept}"
        );
        assert_eq!(response.headers()[header::VARY], "accept-encoding");
        let bytes = bytes(response).await;
        let mut text = String::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_string(&mut text)
            .expect("one gzip stream whose CRC and length hold");
        let zipped: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(zipped["snapshot"], plain["snapshot"], "{accept}");
        assert_eq!(zipped["stale"], plain["stale"]);
    }
    // Refused gzip: the plain JSON (the compression layer may pick another coding).
    let response = send(&app, ask("gzip;q=0, identity")).await;
    assert!(response.headers().get(header::CONTENT_ENCODING).is_none());
    assert_eq!(json(response).await["snapshot"], plain["snapshot"]);
}

#[tokio::test]
async fn the_fleet_api_refuses_bad_filters_clearly() {
    let (app, _) = test_app(false).await;
    fleet_json(&app, "").await;
    let (status, body) = fleet_json(&app, "?mode=SHARED").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("NVIDIA_MPS"),
        "{body}"
    );
    let (status, body) = fleet_json(&app, "?colour=red").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("instance_type"),
        "{body}"
    );
    let (status, body) = fleet_json(&app, "?cluster=%3Cscript%3E").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("inference-prod"),
        "lists what exists: {body}"
    );
}

#[tokio::test]
async fn the_fleet_page_renders_one_cell_per_gpu_and_corrects_bad_parameters() {
    let (app, _) = test_app(false).await;
    let (_, all) = fleet_json(&app, "").await;
    let total = gpus(&all).len();
    let page = text(send(&app, get("/")).await).await;
    let heatmap = page
        .split_once(r#"class="hm"#)
        .map(|(_, rest)| rest.split_once("</svg>").map_or(rest, |(svg, _)| svg))
        .expect("the heatmap is rendered on the server");
    assert_eq!(heatmap.matches("<rect").count(), total);
    assert!(
        page.contains(&format!(
            r#"data-testid="gpu-count" class="value">{total}<"#
        )),
        "the summary counts the same GPUs"
    );

    let response = send(
        &app,
        get("/?cluster=%3Cscript%3Ealert(1)%3C%2Fscript%3E&mode=SHARED&colour=red"),
    )
    .await;
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "a corrected view, not an error"
    );
    let page = text(response).await;
    assert!(
        !page.contains("<script>alert(1)"),
        "untrusted text is escaped"
    );
    assert!(page.contains("There is no cluster"), "says so");
    assert!(
        page.contains("batch-sim, inference-prod, ml-dev"),
        "shows what exists"
    );
    assert!(page.contains(r#"Sharing mode "SHARED" does not exist"#));
    assert!(page.contains(r#"Colour mode "red" does not exist"#));
    let heatmap = page
        .split_once(r#"class="hm"#)
        .map(|(_, rest)| rest.split_once("</svg>").map_or(rest, |(svg, _)| svg))
        .expect("heatmap");
    assert_eq!(
        heatmap.matches("<rect").count(),
        total,
        "the whole fleet instead"
    );

    let dev = text(send(&app, get("/?cluster=ml-dev&colour=utilization")).await).await;
    let (_, expected) = fleet_json(&app, "?cluster=ml-dev").await;
    let svg = dev
        .split_once(r#"class="hm"#)
        .and_then(|(_, rest)| rest.split_once("</svg>"))
        .map(|(svg, _)| svg)
        .expect("heatmap");
    assert_eq!(svg.matches("<rect").count(), gpus(&expected).len());
    assert!(svg.contains(r#"data-colour="utilization""#));
    assert!(
        svg.contains(r#"class="nd "#),
        "the instance without the agent has no data"
    );
}

/// The SVG of a fleet page.
fn svg_of(page: &str) -> &str {
    page.split_once(r#"class="hm"#)
        .and_then(|(_, rest)| rest.split_once("</svg>"))
        .map(|(svg, _)| svg)
        .expect("the heatmap is rendered on the server")
}

#[tokio::test]
async fn the_overview_groups_sorts_and_zooms_by_its_url() {
    let (app, _) = test_app(false).await;
    let (_, all) = fleet_json(&app, "").await;
    let total = gpus(&all).len();

    // The overview: a block per instance, a header per cluster that zooms into it.
    let page = text(send(&app, get("/")).await).await;
    let svg = svg_of(&page);
    assert!(
        svg.starts_with(" packed "),
        "the overview by default: {}",
        &svg[..80]
    );
    assert_eq!(svg.matches("<rect").count(), total);
    let clusters: Vec<&str> = all["snapshot"]["clusters"]
        .as_array()
        .expect("clusters")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    for cluster in &clusters {
        assert!(
            svg.contains(&format!(
                r#"href="/?zoom=cluster%3A{cluster}" data-z="cluster:{cluster}""#
            )),
            "{cluster} has a header that zooms into it"
        );
    }
    let instances: usize = all["snapshot"]["clusters"]
        .as_array()
        .expect("clusters")
        .iter()
        .map(|c| {
            c["instances"].as_array().map_or(0, |i| {
                i.iter()
                    .filter(|i| i["gpus"].as_array().is_some_and(|g| !g.is_empty()))
                    .count()
            })
        })
        .sum();
    assert_eq!(
        svg.matches(" data-i=").count(),
        instances,
        "a block per instance"
    );

    // Grouped by team and sorted: the same GPUs, in team groups.
    let page = text(send(&app, get("/?group=team&sort=utilization")).await).await;
    let svg = svg_of(&page);
    assert_eq!(svg.matches("<rect").count(), total);
    assert!(svg.contains("Team "), "team headers");
    assert!(svg.contains("No team"), "idle GPUs have no team");
    assert!(
        svg.contains("group=team&amp;sort=utilization&amp;zoom=team%3A"),
        "links keep the grouping and the order"
    );

    // Zoomed into a cluster: its rows, and the summary of that cluster only (brushing).
    let cluster = clusters[0];
    let (_, expected) = fleet_json(&app, &format!("?cluster={cluster}")).await;
    let page = text(send(&app, get(&format!("/?zoom=cluster%3A{cluster}"))).await).await;
    let svg = svg_of(&page);
    assert!(
        svg.starts_with(r#"" "#) || !svg.starts_with(" packed"),
        "rows, not blocks"
    );
    assert_eq!(svg.matches("<rect").count(), gpus(&expected).len());
    assert!(svg.contains("<g data-i="));
    assert!(
        page.contains(&format!(
            r#"data-testid="gpu-count" class="value">{}<"#,
            gpus(&expected).len()
        )),
        "the summary is of the part shown"
    );
    assert!(page.contains(r#"data-testid="zoom-out""#), "a way back");
    assert!(
        page.contains(&format!(r#"name="zoom" value="cluster:{cluster}""#)),
        "the form keeps the zoom"
    );

    // One instance.
    let instance = all["snapshot"]["clusters"][0]["instances"][0]["ec2_instance_id"]
        .as_str()
        .expect("an instance");
    let page = text(send(&app, get(&format!("/?zoom=instance%3A{instance}"))).await).await;
    let own = all["snapshot"]["clusters"][0]["instances"][0]["gpus"]
        .as_array()
        .map_or(0, Vec::len);
    assert_eq!(svg_of(&page).matches("<rect").count(), own);

    // A brushed range of instances, across clusters.
    let picked: Vec<(String, usize)> = all["snapshot"]["clusters"]
        .as_array()
        .expect("clusters")
        .iter()
        .filter_map(|c| c["instances"].get(0))
        .map(|i| {
            (
                i["ec2_instance_id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                i["gpus"].as_array().map_or(0, Vec::len),
            )
        })
        .collect();
    let ids: Vec<&str> = picked.iter().map(|(id, _)| id.as_str()).collect();
    let page = text(
        send(
            &app,
            get(&format!("/?zoom=instances%3A{}", ids.join("%2C"))),
        )
        .await,
    )
    .await;
    let expected: usize = picked.iter().map(|(_, n)| n).sum();
    assert_eq!(svg_of(&page).matches("<rect").count(), expected);
    assert!(page.contains(&format!("{} selected instances", ids.len())));

    // A zoom that names nothing: the overview, saying why.
    let page = text(send(&app, get("/?zoom=instance%3Ai-nope&group=rack")).await).await;
    assert!(page.contains("There are no GPUs of instance i-nope here now"));
    assert!(page.contains(r#"Grouping "rack" does not exist"#));
    assert_eq!(svg_of(&page).matches("<rect").count(), total);
}

#[tokio::test]
async fn the_fleet_page_server_functions_answer() {
    let (app, _) = test_app(false).await;
    let (_, all) = fleet_json(&app, "").await;
    let form = |body: &str| {
        Request::post("/api/fleet_overview")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(body.to_string()))
            .expect("request")
    };
    let response = send(&app, form("query[cluster]=nope&query[colour]=compute")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let overview = json(response).await;
    assert_eq!(
        overview["summary"]["gpus"].as_u64(),
        Some(gpus(&all).len() as u64)
    );
    assert_eq!(overview["applied"]["cluster"], serde_json::Value::Null);
    assert!(overview["notes"][0]
        .as_str()
        .unwrap_or_default()
        .contains("no cluster \"nope\""));

    let some_gpu = gpus(&all)
        .into_iter()
        .find(|g| g["containers"].as_array().is_some_and(|c| !c.is_empty()))
        .expect("a busy GPU");
    let request = Request::post("/api/gpu_detail")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(format!(
            "key={}",
            some_gpu["uuid"].as_str().unwrap_or_default()
        )))
        .expect("request");
    let detail = json(send(&app, request).await).await;
    assert_eq!(detail["gpu"]["uuid"], some_gpu["uuid"]);
    assert!(!detail["gpu_services"].as_array().expect("list").is_empty());
}

#[tokio::test]
async fn fleet_events_stream_the_snapshot_version() {
    let (app, _) = test_app(false).await;
    fleet_json(&app, "").await;
    let response = send(&app, get("/api/v1/fleet/events")).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok()),
        Some("text/event-stream")
    );
    let mut body = response.into_body();
    let frame = tokio::time::timeout(std::time::Duration::from_secs(5), body.frame())
        .await
        .expect("the first event comes at once")
        .expect("a frame")
        .expect("no error");
    let event = String::from_utf8(frame.into_data().expect("data").to_vec()).expect("utf-8");
    assert!(event.starts_with("event: message\ndata: {"), "{event}");
    assert!(
        event.contains(r#""version":"#) && event.contains(r#""stale":false"#),
        "{event}"
    );
}
