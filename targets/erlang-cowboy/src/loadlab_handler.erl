%% @doc The contract's plain GET endpoints as one Cowboy handler; the route's options name the
%% endpoint (see loadlab_cowboy:routes/0). Each request runs in its own Erlang process, as
%% Cowboy does for every request; nothing here is cached between requests (the portfolio's
%% posts are converted once at start-up by loadlab_portfolio).
-module(loadlab_handler).
-behaviour(cowboy_handler).

-export([init/2]).

init(Req0, Endpoint) ->
    Req =
        case cowboy_req:method(Req0) of
            <<"GET">> -> handle(Endpoint, Req0);
            _ -> not_found(Req0)
        end,
    {ok, Req, Endpoint}.

handle(plaintext, Req) ->
    loadlab_contract:text(Req, 200, <<"Hello, World!">>);
handle(json, Req) ->
    loadlab_contract:json(Req, #{<<"message">> => <<"Hello, World!">>});
handle(healthz, Req) ->
    loadlab_contract:text(Req, 200, <<"ok">>);
handle(block, Req) ->
    with_param(Req, <<"ms">>, block, fun(Ms) ->
        %% The handling process blocks for Ms: erlang code cannot hold a scheduler thread
        %% (the BEAM preempts any loop), so, as with Go's goroutines, the blocked unit is the
        %% request's own process, and the scheduler serves others meanwhile. /delay instead
        %% returns to Cowboy and is woken by a timer message (loadlab_delay).
        timer:sleep(Ms),
        loadlab_contract:text(Req, 200, <<"done">>)
    end);
handle(compute, Req) ->
    with_param(Req, <<"n">>, compute, fun(N) ->
        loadlab_contract:json(Req, loadlab_contract:compute(N))
    end);
handle(bytes, Req) ->
    with_param(Req, <<"n">>, bytes, fun(N) ->
        loadlab_contract:octets(Req, loadlab_contract:bytes(N))
    end);
handle(home, Req) ->
    loadlab_contract:html(Req, 200, loadlab_portfolio:home());
handle(blogs, Req) ->
    loadlab_contract:html(Req, 200, loadlab_portfolio:blogs());
handle(blog, Req) ->
    case loadlab_portfolio:blog(cowboy_req:binding(id, Req)) of
        {ok, Page} -> loadlab_contract:html(Req, 200, Page);
        error -> not_found(Req)
    end;
handle(version, Req) ->
    loadlab_contract:html(Req, 200, loadlab_portfolio:version());
handle(not_found, Req) ->
    not_found(Req).

not_found(Req) ->
    loadlab_contract:html(Req, 404, loadlab_portfolio:not_found()).

%% Runs Fun with the parameter's value, or answers 400 naming it.
with_param(Req, Name, Limit, Fun) ->
    case loadlab_contract:param(Req, Name, Limit) of
        {ok, Value} -> Fun(Value);
        {bad, Message} -> loadlab_contract:text(Req, 400, Message)
    end.
