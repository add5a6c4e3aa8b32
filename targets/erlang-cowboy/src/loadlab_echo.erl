%% @doc POST /echo: the request body back, byte for byte, whether it came with Content-Length
%% or chunked, up to the contract's 1 MiB; a larger body gets 413. The body is read with
%% cowboy_req:read_body/2 in pieces; past the limit the rest is read and dropped (up to
%% DRAIN_MAX_BYTES) before the 413, because a server that closes with bytes unread makes the
%% kernel reset the connection and the client can lose the 413 (what gunicorn did, see
%% ../README.md). Past DRAIN_MAX_BYTES, or when Content-Length says so up front, it answers at
%% once and Cowboy closes the connection.
-module(loadlab_echo).
-behaviour(cowboy_handler).

-export([init/2]).

-define(DRAIN_MAX_BYTES, 16 * 1024 * 1024).
-define(READ_BYTES, 256 * 1024).

init(Req0, State) ->
    Req =
        case cowboy_req:method(Req0) of
            <<"POST">> -> echo(Req0);
            _ -> loadlab_contract:html(Req0, 404, loadlab_portfolio:not_found())
        end,
    {ok, Req, State}.

echo(Req) ->
    case cowboy_req:body_length(Req) of
        Length when is_integer(Length), Length > ?DRAIN_MAX_BYTES -> too_large(Req);
        _ -> read(Req, [], 0)
    end.

read(Req0, Acc, Length) ->
    {Status, Data, Req} = cowboy_req:read_body(Req0, #{length => ?READ_BYTES}),
    Total = Length + byte_size(Data),
    Max = loadlab_contract:limit(echo),
    Kept =
        case Total =< Max of
            true -> [Acc, Data];
            false -> []
        end,
    case Status of
        more when Total > ?DRAIN_MAX_BYTES -> too_large(Req);
        more -> read(Req, Kept, Total);
        ok when Total > Max -> too_large(Req);
        ok -> loadlab_contract:octets(Req, Kept)
    end.

too_large(Req) ->
    Message = io_lib:format("the request body must be at most ~b bytes", [loadlab_contract:limit(echo)]),
    cowboy_req:reply(413, #{<<"content-type">> => <<"text/plain; charset=utf-8">>}, Message, Req).
