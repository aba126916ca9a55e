//! The hint of a failure, found along its error's [`Error::source`] chain: the first error of
//! the chain that has one gives it. This is the one place that knows which errors carry hints
//! ([`Hint`]); the binary prints a failure as its `error:` line and this `hint:` line.

use std::error::Error;

use crate::agent::demos::DemoError;
use crate::agent::run::EpisodeFailure;
use crate::batch::StartError;
use crate::config::ConfigError;
use crate::hint::Hint;
use crate::image::ImageError;
use crate::image::env::EnvImageError;
use crate::image::spec_env::SpecEnvError;
use crate::instance::{InstanceFileError, SelectionError};
use crate::model::ModelError;
use crate::sandbox::k8s::kubeconfig::KubeconfigError;
use crate::source::PrepareError;

/// Each error type that may carry a hint, tried in turn on every error of a chain.
const HINTED: [fn(&(dyn Error + 'static)) -> Option<String>; 12] = [
    hint_as::<ModelError>,
    hint_as::<ConfigError>,
    hint_as::<ImageError>,
    hint_as::<EnvImageError>,
    hint_as::<SpecEnvError>,
    hint_as::<SelectionError>,
    hint_as::<KubeconfigError>,
    hint_as::<DemoError>,
    hint_as::<EpisodeFailure>,
    hint_as::<PrepareError>,
    hint_as::<StartError>,
    hint_as::<InstanceFileError>,
];

/// The hint of `error` or, when it has none, of the first of its sources that has one.
pub fn hint_of(error: &(dyn Error + 'static)) -> Option<String> {
    std::iter::successors(Some(error), |error| (*error).source())
        .find_map(|error| HINTED.iter().find_map(|hint| hint(error)))
}

fn hint_as<E: Error + Hint + 'static>(error: &(dyn Error + 'static)) -> Option<String> {
    error.downcast_ref::<E>().and_then(Hint::hint)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error without a hint of its own that wraps one with a hint.
    #[derive(Debug, thiserror::Error)]
    #[error("the run stopped: {source}")]
    struct Wrapper {
        source: ModelError,
    }

    #[test]
    fn the_hint_of_a_wrapped_error_is_found_along_its_sources() {
        let error = Wrapper {
            source: ModelError::Config {
                message: "no key".to_owned(),
                hint: Some("export OPENAI_API_KEY".to_owned()),
            },
        };
        assert_eq!(hint_of(&error).as_deref(), Some("export OPENAI_API_KEY"));
        let error = std::io::Error::other("no hint");
        assert_eq!(hint_of(&error), None);
    }
}
