//! One of two copies of one crate for the eval isolation test: the same
//! package and test names, so a shared target folder would hand one
//! attempt the other's test binary. This copy's test fails.

pub fn add(a: i64, b: i64) -> i64 {
    a - b
}

#[cfg(test)]
mod tests {
    #[test]
    fn adds() {
        assert_eq!(super::add(2, 3), 5);
    }
}
