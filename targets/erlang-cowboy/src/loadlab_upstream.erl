%% @doc GET /upstream?calls=N[&client=pooled|per-call] with OTP's HTTP client, httpc (inets).
%% An httpc client is a profile: its own manager, connection (session) table and options.
%% `pooled' is one profile for the whole process, started by init/1, whose keep-alive sessions
%% and TLS sessions every call shares. `per-call' starts a new stand-alone profile for each
%% call and stops it after, so each call opens its own connection; over https it also refuses
%% the node's TLS session cache (reuse_sessions false), so each pays a full handshake.
%% httpc names a profile's tables after the profile, so concurrent per-call clients need
%% distinct names: they are taken from a pool of slots (atoms reused, never one per call).
-module(loadlab_upstream).
-behaviour(cowboy_handler).

-export([init/1, init/2]).

-define(POOLED, loadlab_upstream_pooled).
-define(CONFIG_KEY, {?MODULE, config}).
-define(SLOTS, loadlab_upstream_slots).
-define(SNI_KEY, {?MODULE, sni}).

%% `Upstream' is none, or {Url, Ca} with Ca none (http), system or a PEM file path.
init(none) ->
    persistent_term:put(?CONFIG_KEY, none);
init({Url, Ca}) ->
    {ok, _} = application:ensure_all_started(inets),
    {ok, _} = application:ensure_all_started(ssl),
    {ok, _} = inets:start(httpc, [{profile, ?POOLED}]),
    %% The slots' table lives as long as the node: its owner is a process of its own, not the
    %% start-up process that calls this.
    Self = self(),
    spawn(fun() ->
        ?SLOTS = ets:new(?SLOTS, [public, named_table, ordered_set]),
        ets:insert(?SLOTS, {next, 0}),
        Self ! {?SLOTS, ready},
        receive
        after infinity -> ok
        end
    end),
    receive
        {?SLOTS, ready} -> ok
    end,
    persistent_term:put(?SNI_KEY, sni_options(Url)),
    persistent_term:put(?CONFIG_KEY, {Url, Ca}).

init(Req0, State) ->
    Req =
        case cowboy_req:method(Req0) of
            <<"GET">> -> handle(Req0);
            _ -> loadlab_contract:html(Req0, 404, loadlab_portfolio:not_found())
        end,
    {ok, Req, State}.

handle(Req) ->
    case {loadlab_contract:param(Req, <<"calls">>, calls), loadlab_contract:client(Req)} of
        {{bad, Message}, _} ->
            loadlab_contract:text(Req, 400, Message);
        {_, {bad, Message}} ->
            loadlab_contract:text(Req, 400, Message);
        {{ok, Calls}, {ok, Client}} ->
            case persistent_term:get(?CONFIG_KEY) of
                none ->
                    loadlab_contract:text(Req, 503, <<"UPSTREAM_URL is not set">>);
                {Url, Ca} ->
                    case calls(Calls, Client, Url, Ca, 0) of
                        {ok, Bytes} ->
                            Name = atom_to_binary(Client),
                            Shown = binary:replace(Name, <<"_">>, <<"-">>),
                            loadlab_contract:json(Req, [
                                {calls, Calls}, {client, Shown}, {upstream_bytes, Bytes}
                            ]);
                        {error, Why} ->
                            Message = io_lib:format("upstream call failed: ~tp", [Why]),
                            loadlab_contract:text(Req, 502, Message)
                    end
            end
    end.

%% N calls, one after another; {ok, BodyBytes} or the first {error, Why}.
calls(0, _, _, _, Bytes) ->
    {ok, Bytes};
calls(N, Client, Url, Ca, Bytes) ->
    case call(Client, Url, Ca) of
        {ok, Length} -> calls(N - 1, Client, Url, Ca, Bytes + Length);
        Error -> Error
    end.

call(pooled, Url, Ca) ->
    get(Url, http_options(Ca, pooled), ?POOLED);
call(per_call, Url, Ca) ->
    Slot = take_slot(),
    try inets:start(httpc, [{profile, Slot}], stand_alone) of
        {ok, Pid} ->
            try
                get(Url, http_options(Ca, per_call), Pid)
            after
                %% The stand-alone manager is linked to this process, and stopping it is an
                %% exit signal (shutdown) that would take the request process down with it.
                %% The slot is free once the manager and its named tables are gone.
                unlink(Pid),
                Down = monitor(process, Pid),
                inets:stop(stand_alone, Pid),
                receive
                    {'DOWN', Down, process, _, _} -> ok
                end
            end;
        {error, Why} ->
            {error, {per_call_client, Why}}
    after
        ets:insert(?SLOTS, {Slot})
    end.

get(Url, HttpOptions, Client) ->
    Options = [{body_format, binary}],
    case httpc:request(get, {Url, []}, HttpOptions, Options, Client) of
        {ok, {{_, Status, _}, _, Body}} when Status >= 200, Status =< 299 ->
            {ok, byte_size(Body)};
        {ok, {{_, Status, _}, _, _}} ->
            {error, {status, Status}};
        {error, Why} ->
            {error, Why}
    end.

%% httpc's per-request options: over https, verify the upstream against UPSTREAM_CA (or the
%% system's store) and its host name; the pooled client resumes TLS sessions (1.2 by session
%% id, 1.3 by ticket), the per-call one never does.
http_options(none, _) ->
    [];
http_options(Ca, Client) ->
    Trust =
        case Ca of
            system -> [{cacerts, public_key:cacerts_get()}];
            File -> [{cacertfile, File}]
        end,
    Resume =
        case Client of
            pooled -> [{reuse_sessions, true}, {session_tickets, auto}];
            per_call -> [{reuse_sessions, false}]
        end,
    Check = [{customize_hostname_check, [{match_fun, public_key:pkix_verify_hostname_match_fun(https)}]}],
    [{ssl, [{verify, verify_peer} | Trust] ++ Check ++ Resume ++ persistent_term:get(?SNI_KEY)}].

%% An IP address is not a server name (RFC 6066): for an upstream such as https://127.0.0.1/
%% SNI is off, and ssl then checks the certificate against the address itself (its iPAddress
%% names); with SNI on, ssl would look for a DNS name "127.0.0.1" and refuse the certificate.
sni_options(Url) ->
    #{host := Host} = uri_string:parse(Url),
    case inet:parse_address(string:trim(Host, both, "[]")) of
        {ok, _} -> [{server_name_indication, disable}];
        {error, _} -> []
    end.

%% A free profile name for a per-call client: a freed one, else a new one (so the number of
%% atoms is the most per-call calls ever in flight at once, not the number of calls).
take_slot() ->
    case ets:first(?SLOTS) of
        Slot when is_atom(Slot), Slot =/= next, Slot =/= '$end_of_table' ->
            case ets:take(?SLOTS, Slot) of
                [_] -> Slot;
                [] -> take_slot()
            end;
        _ ->
            N = ets:update_counter(?SLOTS, next, 1),
            list_to_atom("loadlab_upstream_per_call_" ++ integer_to_list(N))
    end.
