%% @doc GET /delay?ms=N as a Cowboy loop handler, the way Cowboy's guide waits for an event:
%% init/2 arms a timer (erlang:send_after) and returns to Cowboy; the timer's message wakes
%% info/3, which answers. Nothing sleeps while it waits.
-module(loadlab_delay).
-behaviour(cowboy_loop).

-export([init/2, info/3]).

init(Req, State) ->
    case cowboy_req:method(Req) of
        <<"GET">> ->
            case loadlab_contract:param(Req, <<"ms">>, delay) of
                {ok, Ms} ->
                    erlang:send_after(Ms, self(), {?MODULE, done}),
                    {cowboy_loop, Req, State};
                {bad, Message} ->
                    {ok, loadlab_contract:text(Req, 400, Message), State}
            end;
        _ ->
            {ok, loadlab_contract:html(Req, 404, loadlab_portfolio:not_found()), State}
    end.

info({?MODULE, done}, Req, State) ->
    {stop, loadlab_contract:text(Req, 200, <<"done">>), State};
info(_Other, Req, State) ->
    {ok, Req, State}.
