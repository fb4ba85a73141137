//! Enrichment (being written).
