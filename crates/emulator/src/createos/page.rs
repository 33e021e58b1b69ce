//! Pagination of list endpoints: `?limit=` (default 50, clamped to 500) and `?offset=`,
//! answered as `{"data":[…],"pagination":{"total","limit","offset","count"}}` inside the
//! success envelope, the shape the vendor's client pages through.

use serde_json::{Value, json};

use super::envelope::ApiError;

pub const DEFAULT_LIMIT: usize = 50;
pub const MAX_LIMIT: usize = 500;

/// The parameters every paginated list takes (endpoints add their own filters).
pub const PAGE_PARAMS: &[&str] = &["limit", "offset"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub limit: usize,
    pub offset: usize,
}

impl Page {
    /// From the query's `(name, value)` pairs. A limit of 0 means the default, a larger one
    /// than `max` (the server's 500, see `Settings::max_page_size`) is clamped, as the server
    /// does; a value that is not a non-negative integer is a 400.
    pub fn from_pairs(pairs: &[(String, String)], max: usize) -> Result<Page, ApiError> {
        let number = |name: &str| -> Result<Option<usize>, ApiError> {
            match pairs.iter().rev().find(|(k, _)| k == name) {
                None => Ok(None),
                Some((_, v)) => v.parse::<usize>().map(Some).map_err(|_| {
                    ApiError::bad_request(format!("{name} must be a non-negative integer"))
                }),
            }
        };
        let limit = match number("limit")? {
            None | Some(0) => DEFAULT_LIMIT,
            Some(n) => n,
        }
        .min(max);
        Ok(Page {
            limit,
            offset: number("offset")?.unwrap_or(0),
        })
    }

    /// The page of `items` (all matching rows, in list order) as the list payload.
    pub fn of(self, items: Vec<Value>) -> Value {
        let total = items.len();
        let data: Vec<Value> = items
            .into_iter()
            .skip(self.offset)
            .take(self.limit)
            .collect();
        json!({
            "data": data,
            "pagination": {
                "total": total,
                "limit": self.limit,
                "offset": self.offset,
                "count": data.len(),
            },
        })
    }
}

/// The query's pairs, refusing a parameter outside `allowed` (400 naming it): a client
/// filtering by something the API does not have must not silently get everything back.
pub fn query_pairs(
    query: Option<&str>,
    allowed: &[&str],
) -> Result<Vec<(String, String)>, ApiError> {
    let pairs: Vec<(String, String)> = form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    match pairs.iter().find(|(k, _)| !allowed.contains(&k.as_str())) {
        Some((k, _)) => Err(ApiError::bad_request(format!(
            "unknown query parameter {k:?}"
        ))),
        None => Ok(pairs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(q: &str) -> Vec<(String, String)> {
        query_pairs(Some(q), &["limit", "offset", "status"]).unwrap()
    }

    #[test]
    fn limits_default_clamp_and_page() {
        assert_eq!(
            Page::from_pairs(&pairs(""), MAX_LIMIT).unwrap(),
            Page {
                limit: 50,
                offset: 0
            }
        );
        assert_eq!(
            Page::from_pairs(&pairs("limit=9999"), MAX_LIMIT)
                .unwrap()
                .limit,
            500
        );
        // A lowered maximum clamps the default as well.
        assert_eq!(Page::from_pairs(&pairs(""), 2).unwrap().limit, 2);
        assert!(Page::from_pairs(&pairs("limit=-1"), MAX_LIMIT).is_err());
        assert!(query_pairs(Some("label=a%3Db"), PAGE_PARAMS).is_err());
        let page = Page::from_pairs(&pairs("limit=2&offset=1"), MAX_LIMIT).unwrap();
        let v = page.of((0..4).map(|i| json!(i)).collect());
        assert_eq!(v["data"], json!([1, 2]));
        assert_eq!(
            v["pagination"],
            json!({"total": 4, "limit": 2, "offset": 1, "count": 2})
        );
    }
}
