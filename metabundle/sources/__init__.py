"""Pure fetch and parse code per upstream source; no Dagster here.

``http`` is the download layer (httpx, retries, content cache); ``layout`` maps each
source to its public URLs or to a mirror. Each source module turns downloaded files
into Arrow tables that match the schema registry. Parsers never talk to the release.
"""
