%% @doc What the contract (../../CONTRACT.md) asks of every target, apart from Cowboy's own
%% routing: the 400 rule for query parameters, the /compute generator, the /bytes payload, and
%% the replies with the contract's content types. Holds no connection state; the /bytes buffer
%% is built once at start-up (init/0) and kept in persistent_term.
-module(loadlab_contract).

-export([init/0, param/3, client/1, compute/1, bytes/1, limit/1]).
-export([text/3, html/3, json/2, octets/2]).

-define(BYTES_KEY, {?MODULE, bytes}).

%% The largest value of each parameter, and of the /echo body.
limit(delay) -> 10000;
limit(block) -> 1000;
limit(compute) -> 100000;
limit(bytes) -> 10485760;
limit(calls) -> 64;
limit(echo) -> 1048576.

init() ->
    N = limit(bytes),
    Alphabet = <<"abcdefghijklmnopqrstuvwxyz">>,
    Whole = binary:copy(Alphabet, N div 26 + 1),
    persistent_term:put(?BYTES_KEY, binary:part(Whole, 0, N)).

%% The first N bytes of `abc...zabc...': a sub-binary of the start-up buffer, not a copy.
bytes(N) ->
    binary:part(persistent_term:get(?BYTES_KEY), 0, N).

%% The parameter `Name' (a binary) of the request: one or more ASCII digits, at most
%% limit(Limit); the first one counts when it repeats. {ok, N} or {bad, Message}.
param(Req, Name, Limit) ->
    Max = limit(Limit),
    Raw = first(Req, Name),
    case Raw of
        <<_, _/binary>> when is_binary(Raw) ->
            case all_digits(Raw) andalso binary_to_integer(Raw) =< Max of
                true -> {ok, binary_to_integer(Raw)};
                false -> {bad, bad_message(Name, Max, Raw)}
            end;
        _ ->
            {bad, bad_message(Name, Max, Raw)}
    end.

bad_message(Name, Max, Raw) ->
    Shown =
        case Raw of
            Raw when is_binary(Raw) -> Raw;
            _ -> <<>>
        end,
    iolist_to_binary(
        io_lib:format("query parameter ~s must be a whole number from 0 to ~b, got ~tp", [
            Name, Max, binary_to_list(Shown)
        ])
    ).

%% `client': absent or pooled (pooled), per-call; anything else is a 400.
client(Req) ->
    case first(Req, <<"client">>) of
        undefined -> {ok, pooled};
        <<"pooled">> -> {ok, pooled};
        <<"per-call">> -> {ok, per_call};
        Other ->
            Shown =
                case Other of
                    true -> "";
                    _ -> binary_to_list(Other)
                end,
            {bad,
                iolist_to_binary(
                    io_lib:format("query parameter client must be pooled or per-call, got ~tp", [Shown])
                )}
    end.

%% The first value of `Name' in the query string (`true' for a key without `='), `undefined'
%% when absent, `invalid' when the query string is not valid percent-encoding.
first(Req, Name) ->
    try cowboy_req:parse_qs(Req) of
        Qs ->
            case lists:keyfind(Name, 1, Qs) of
                {_, Value} -> Value;
                false -> undefined
            end
    catch
        _:_ -> invalid
    end.

all_digits(Bin) ->
    lists:all(fun(C) -> C >= $0 andalso C =< $9 end, binary_to_list(Bin)).

%% The first N numbers of the 31-bit LCG: x0 = 42, x(k+1) = (1103515245 x(k) + 12345) mod 2^31.
compute(N) -> compute(N, 42, []).

compute(0, _, Acc) ->
    lists:reverse(Acc);
compute(N, X, Acc) ->
    Next = (1103515245 * X + 12345) band 16#7fffffff,
    compute(N - 1, Next, [Next | Acc]).

text(Req, Status, Body) ->
    cowboy_req:reply(Status, #{<<"content-type">> => <<"text/plain; charset=utf-8">>}, Body, Req).

html(Req, Status, Body) ->
    cowboy_req:reply(Status, #{<<"content-type">> => <<"text/html; charset=utf-8">>}, Body, Req).

%% `Term' serialized by jsx, per request.
json(Req, Term) ->
    cowboy_req:reply(200, #{<<"content-type">> => <<"application/json">>}, jsx:encode(Term), Req).

octets(Req, Body) ->
    cowboy_req:reply(200, #{<<"content-type">> => <<"application/octet-stream">>}, Body, Req).
